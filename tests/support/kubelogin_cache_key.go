// The reference values of src/kubelogin/token_cache.rs: the SHA-256 of Go's encoding/gob of
// int128/kubelogin's tokencache.Key (pkg/tokencache/types.go, with oidc.Provider and
// tlsclientconfig.Config as kubelogin defines them), which names kubelogin's cache entries.
// The key's types changed at 1.32, 1.33, 1.34 and 1.36; each release's are declared below as
// that release's tags have them (gob writes the types' names and fields, so each set keeps
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

// The TLS settings of the "full" cases.
var fullTLS = Config{CACertFilename: []string{"/home/u/.kube/ca.crt"}, CACertData: []string{"QUJD"}, SkipTLSVerify: true, Renegotiation: tls.RenegotiateOnceAsClient}

var longIssuer = "https://login.example.com/" + strings.Repeat("a", 219) + "/realms/k8s"

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

// 1.31.x: PKCE a switch, no redirect URL, no maps.
func v1_31() {
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
	print("minimal", &Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID"}})
	print("full", &Key{
		Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID", ClientSecret: "YOUR_CLIENT_SECRET",
			ExtraScopes: []string{"email", "profile"}, UsePKCE: true, UseAccessToken: true},
		TLSClientConfig: fullTLS,
		Username:        "bob",
	})
}

// 1.32.x: PKCE a method.
func v1_32() {
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
	print("minimal", &Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID"}})
	print("full", &Key{
		Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID", ClientSecret: "YOUR_CLIENT_SECRET",
			ExtraScopes: []string{"email", "profile"}, PKCEMethod: 2, UseAccessToken: true},
		TLSClientConfig: fullTLS,
		Username:        "bob",
	})
}

// 1.33.x: the redirect URL.
func v1_33() {
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
	print("minimal", &Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID"}})
	print("full", &Key{
		Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID", ClientSecret: "YOUR_CLIENT_SECRET",
			ExtraScopes: []string{"email", "profile"}, PKCEMethod: 2, UseAccessToken: true},
		TLSClientConfig: fullTLS,
		Username:        "bob",
	})
	print("keyboard", &Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID", RedirectURL: "urn:ietf:wg:oauth:2.0:oob"}})
}

// 1.34.x and 1.35.x: the request headers.
func v1_34() {
	type Provider struct {
		IssuerURL      string
		ClientID       string
		ClientSecret   string
		ExtraScopes    []string
		RedirectURL    string
		PKCEMethod     PKCEMethod
		UseAccessToken bool
		RequestHeaders map[string]string
	}
	type Key struct {
		Provider        Provider
		TLSClientConfig Config
		Username        string
	}
	print("minimal", &Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID"}})
	print("full", &Key{
		Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID", ClientSecret: "YOUR_CLIENT_SECRET",
			ExtraScopes: []string{"email", "profile"}, PKCEMethod: 2, UseAccessToken: true},
		TLSClientConfig: fullTLS,
		Username:        "bob",
	})
	print("keyboard", &Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID", RedirectURL: "urn:ietf:wg:oauth:2.0:oob"}})
	print("redirect-header", &Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID",
		RedirectURL: "http://localhost:8000", RequestHeaders: map[string]string{"Origin": "localhost:8080"}}})
	orders("two-headers", &Key{Provider: Provider{IssuerURL: "https://i", ClientID: "c", RequestHeaders: map[string]string{"A": "1", "B": "2"}}})
}

// 1.36 and later: the authorization request's extra parameters.
func v1_36() {
	type Provider struct {
		IssuerURL      string
		ClientID       string
		ClientSecret   string
		ExtraScopes    []string
		RedirectURL    string
		PKCEMethod     PKCEMethod
		UseAccessToken bool
		RequestHeaders map[string]string
	}
	type Key struct {
		Provider               Provider
		TLSClientConfig        Config
		Username               string
		AuthRequestExtraParams map[string]string
	}
	print("minimal", &Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID"}})
	print("full", &Key{
		Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID", ClientSecret: "YOUR_CLIENT_SECRET",
			ExtraScopes: []string{"email", "profile"}, RedirectURL: "http://localhost:8000", PKCEMethod: 2, UseAccessToken: true,
			RequestHeaders: map[string]string{"Origin": "localhost:8080"}},
		TLSClientConfig:        fullTLS,
		Username:               "bob",
		AuthRequestExtraParams: map[string]string{"prompt": "login"},
	})
	print("older-full", &Key{
		Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID", ClientSecret: "YOUR_CLIENT_SECRET",
			ExtraScopes: []string{"email", "profile"}, PKCEMethod: 2, UseAccessToken: true},
		TLSClientConfig: fullTLS,
		Username:        "bob",
	})
	print("redirect-header", &Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID",
		RedirectURL: "http://localhost:8000", RequestHeaders: map[string]string{"Origin": "localhost:8080"}}})
	print("empty-map", &Key{Provider: Provider{IssuerURL: "https://i", ClientID: "c"}, AuthRequestExtraParams: map[string]string{}})
	print("pkce-no-freely", &Key{Provider: Provider{IssuerURL: "https://i", ClientID: "c", PKCEMethod: 1}, TLSClientConfig: Config{Renegotiation: tls.RenegotiateFreelyAsClient}})
	print("long-string", &Key{Provider: Provider{IssuerURL: longIssuer, ClientID: "ü-client"}})
	orders("two-maps", &Key{Provider: Provider{IssuerURL: "https://i", ClientID: "c", RequestHeaders: map[string]string{"A": "1", "B": "2"}}, AuthRequestExtraParams: map[string]string{"x": "1", "y": "2"}})
}

func main() {
	release := "1.36"
	if len(os.Args) > 1 {
		release = os.Args[1]
	}
	switch release {
	case "1.31":
		v1_31()
	case "1.32":
		v1_32()
	case "1.33":
		v1_33()
	case "1.34":
		v1_34()
	case "1.36":
		v1_36()
	default:
		fmt.Fprintln(os.Stderr, "release: one of 1.31, 1.32, 1.33, 1.34, 1.36")
		os.Exit(2)
	}
}
