# A stand-in for Homebrew's Formula class, enough to run kubecred's generated formula without
# Homebrew (which needs network access and macOS or Linuxbrew): the DSL records the url and
# sha256 chosen for one OS and CPU, `install` runs in the archive's folder (Homebrew changes into
# the one top-level folder of an archive before `install`) against a fresh prefix, and the
# formula's `test do` block runs against that prefix. Used by scripts/archive_test.py.
#
#   ruby brew_formula.rb FORMULA FOLDER PREFIX OS CPU     (OS: macos|linux, CPU: arm|intel)
#
# Prints the chosen url and sha256 as two lines; fails on a file the formula names that the
# archive lacks, on a `version` stanza (brew audit: the version is read from the url), or on a
# failing test block.
require "fileutils"
require "pathname"

FORMULA_FILE, FOLDER, PREFIX, TARGET_OS, TARGET_CPU = ARGV
abort "usage: ruby brew_formula.rb FORMULA FOLDER PREFIX OS CPU" unless TARGET_CPU

# Homebrew's Pathname#install and #install_symlink, as formulae use them.
class Pathname
  def install(*sources)
    mkpath
    sources.each do |source|
      pairs = source.is_a?(Hash) ? source.to_a : [[source, File.basename(source.to_s)]]
      pairs.each do |from, to|
        raise "#{from}: the formula installs it, the archive has no such file" unless File.exist?(from)

        FileUtils.mv(from, join(to))
      end
    end
  end

  def install_symlink(links)
    mkpath
    links.each { |target, name| File.symlink(target, join(name)) }
  end
end

class Formula
  class << self
    attr_reader :chosen_url, :chosen_sha256, :test_block

    def desc(_text); end
    def homepage(_url); end
    def license(_name); end

    def version(_version)
      raise "a version stanza repeats what Homebrew reads from the url (brew audit flags it)"
    end

    def url(address) = @chosen_url = address
    def sha256(digest) = @chosen_sha256 = digest
    def on_macos = (yield if TARGET_OS == "macos")
    def on_linux = (yield if TARGET_OS == "linux")
    def on_arm = (yield if TARGET_CPU == "arm")
    def on_intel = (yield if TARGET_CPU == "intel")
    def test(&block) = @test_block = block
  end

  def prefix = Pathname.new(PREFIX)
  def bin = prefix/"bin"
  def man1 = prefix/"share/man/man1"
  def bash_completion = prefix/"etc/bash_completion.d"
  def zsh_completion = prefix/"share/zsh/site-functions"
  def fish_completion = prefix/"share/fish/vendor_completions.d"

  # Homebrew's rule for kubecred-X.Y.Z-<target>.tar.gz: the dotted number between dashes.
  def version
    self.class.chosen_url[%r{/kubecred-(\d+(?:\.\d+)+)-[^/]+$}, 1] or
      raise "no version in #{self.class.chosen_url}"
  end

  def shell_output(command)
    output = `#{command}`
    raise "#{command} failed: #{$?}" unless $?.success?

    output
  end

  def assert_match(expected, actual)
    raise "#{actual.inspect} does not match #{expected.inspect}" unless actual.match?(Regexp.new(Regexp.escape(expected.to_s)))
  end

  def run_test = instance_eval(&self.class.test_block)
end

load FORMULA_FILE
formula = Object.const_get(:Kubecred).new
abort "the formula has no url for #{TARGET_OS} #{TARGET_CPU}" unless formula.class.chosen_url
Dir.chdir(FOLDER) { formula.install }
formula.run_test
puts formula.class.chosen_url, formula.class.chosen_sha256
