// The reference values of src/peers/kubelogin/token_cache.rs: the SHA-256 of Go's encoding/gob of
// int128/kubelogin's tokencache.Key (pkg/tokencache/types.go, with oidc.Provider and
// tlsclientconfig.Config as kubelogin defines them), which names kubelogin's cache entries.
// The key's types changed at 1.32, 1.33, 1.34 and 1.36; each release's are declared below as
// that release's tag has them (gob writes the types' names and fields, so each set keeps
// kubelogin's names: Key, Provider, Config).
// Not run by the tests (they hold its output); to make new values:
// `go run kubelogin_cache_key.go RELEASE` with RELEASE one of 1.31, 1.32, 1.33, 1.34, 1.36
// (Debian's golang-go; no module needed). One release per process: gob numbers types in the
// order a process first meets them, and kubelogin encodes the key first thing in its process.
package main

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
)

type Config struct {
	CACertFilename []string
	CACertData     []string
	SkipTLSVerify  bool
	Renegotiation  tls.RenegotiationSupport
}

type PKCEMethod int

// The settings of a case, put in each release's key by that release's function below (a field
// the release's key has not is left out, as kubelogin leaves it out).
type settings struct {
	issuer, client, secret string
	scopes                 []string
	redirect               string
	pkce                   PKCEMethod
	accessToken            bool
	headers                map[string]string
	tls                    Config
	username               string
	params                 map[string]string
}

const issuer = "https://issuer.example.com"
const client = "YOUR_CLIENT_ID"

var minimal = settings{issuer: issuer, client: client}

// Secret, scopes, PKCE S256 (1.31's switch), access token, TLS, the password grant's user.
var older = settings{issuer: issuer, client: client, secret: "YOUR_CLIENT_SECRET",
	scopes: []string{"email", "profile"}, pkce: 2, accessToken: true,
	tls:      Config{CACertFilename: []string{"/home/u/.kube/ca.crt"}, CACertData: []string{"QUJD"}, SkipTLSVerify: true, Renegotiation: tls.RenegotiateOnceAsClient},
	username: "bob"}

var keyboard = settings{issuer: issuer, client: client, redirect: "urn:ietf:wg:oauth:2.0:oob"}

var redirectHeader = settings{issuer: issuer, client: client, redirect: "http://localhost:8000",
	headers: map[string]string{"Origin": "localhost:8080"}}

// 1.31.x: PKCE a switch, no redirect URL, no maps.
func v1_31(s settings) interface{} {
	type Provider struct {
		IssuerURL      string
		ClientID       string
		ClientSecret   string
		ExtraScopes    []string
		UsePKCE        bool
		UseAccessToken bool
	}
	type Key struct {
		Provider        Provider
		TLSClientConfig Config
		Username        string
	}
	return &Key{Provider{s.issuer, s.client, s.secret, s.scopes, s.pkce == 2, s.accessToken}, s.tls, s.username}
}

// 1.32.x: PKCE a method.
func v1_32(s settings) interface{} {
	type Provider struct {
		IssuerURL      string
		ClientID       string
		ClientSecret   string
		ExtraScopes    []string
		PKCEMethod     PKCEMethod
		UseAccessToken bool
	}
	type Key struct {
		Provider        Provider
		TLSClientConfig Config
		Username        string
	}
	return &Key{Provider{s.issuer, s.client, s.secret, s.scopes, s.pkce, s.accessToken}, s.tls, s.username}
}

// 1.33.x: the redirect URL.
func v1_33(s settings) interface{} {
	type Provider struct {
		IssuerURL      string
		ClientID       string
		ClientSecret   string
		ExtraScopes    []string
		RedirectURL    string
		PKCEMethod     PKCEMethod
		UseAccessToken bool
	}
	type Key struct {
		Provider        Provider
		TLSClientConfig Config
		Username        string
	}
	return &Key{Provider{s.issuer, s.client, s.secret, s.scopes, s.redirect, s.pkce, s.accessToken}, s.tls, s.username}
}

type providerWithHeaders struct {
	IssuerURL      string
	ClientID       string
	ClientSecret   string
	ExtraScopes    []string
	RedirectURL    string
	PKCEMethod     PKCEMethod
	UseAccessToken bool
	RequestHeaders map[string]string
}

// 1.34.x and 1.35.x: the request headers.
func v1_34(s settings) interface{} {
	type Provider providerWithHeaders
	type Key struct {
		Provider        Provider
		TLSClientConfig Config
		Username        string
	}
	return &Key{Provider{s.issuer, s.client, s.secret, s.scopes, s.redirect, s.pkce, s.accessToken, s.headers}, s.tls, s.username}
}

// 1.36 and later: the authorization request's extra parameters.
func v1_36(s settings) interface{} {
	type Provider providerWithHeaders
	type Key struct {
		Provider               Provider
		TLSClientConfig        Config
		Username               string
		AuthRequestExtraParams map[string]string
	}
	return &Key{Provider{s.issuer, s.client, s.secret, s.scopes, s.redirect, s.pkce, s.accessToken, s.headers}, s.tls, s.username, s.params}
}

func sum(k interface{}) (string, string) {
	s := sha256.New()
	var raw []byte
	w := &tee{s, &raw}
	if err := gob.NewEncoder(w).Encode(k); err != nil {
		panic(err)
	}
	return hex.EncodeToString(s.Sum(nil)), hex.EncodeToString(raw)
}

type tee struct {
	h   interface{ Write([]byte) (int, error) }
	raw *[]byte
}

func (t *tee) Write(p []byte) (int, error) { *t.raw = append(*t.raw, p...); return t.h.Write(p) }

func print(name string, key interface{}) {
	h, raw := sum(key)
	fmt.Printf("%s %s %s\n", name, h, raw)
}

// Go's map order is random: every order kubelogin may have written, over many runs.
func orders(name string, key interface{}) {
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		h, _ := sum(key)
		seen[h] = true
	}
	var hs []string
	for h := range seen {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	fmt.Println(name, len(hs), hs)
}

func main() {
	release := "1.36"
	if len(os.Args) > 1 {
		release = os.Args[1]
	}
	key := map[string]func(settings) interface{}{"1.31": v1_31, "1.32": v1_32, "1.33": v1_33, "1.34": v1_34, "1.36": v1_36}[release]
	if key == nil {
		fmt.Fprintln(os.Stderr, "release: one of 1.31, 1.32, 1.33, 1.34, 1.36")
		os.Exit(2)
	}
	print("minimal", key(minimal))
	print("older-full", key(older))
	if release == "1.31" || release == "1.32" {
		return
	}
	if release == "1.33" || release == "1.34" {
		// 1.35 removed --oidc-redirect-url-authcode-keyboard.
		print("keyboard", key(keyboard))
	}
	if release == "1.33" {
		return
	}
	print("redirect-header", key(redirectHeader))
	if release == "1.34" {
		orders("two-headers", key(settings{issuer: "https://i", client: "c", headers: map[string]string{"A": "1", "B": "2"}}))
		return
	}
	full := older
	full.redirect = "http://localhost:8000"
	full.headers = map[string]string{"Origin": "localhost:8080"}
	full.params = map[string]string{"prompt": "login"}
	print("full", key(full))
	print("empty-map", key(settings{issuer: "https://i", client: "c", params: map[string]string{}}))
	print("pkce-no-freely", key(settings{issuer: "https://i", client: "c", pkce: 1, tls: Config{Renegotiation: tls.RenegotiateFreelyAsClient}}))
	print("long-string", key(settings{issuer: "https://login.example.com/" + strings.Repeat("a", 219) + "/realms/k8s", client: "ü-client"}))
	orders("two-maps", key(settings{issuer: "https://i", client: "c", headers: map[string]string{"A": "1", "B": "2"}, params: map[string]string{"x": "1", "y": "2"}}))
}
