// The reference values of src/kubelogin/token_cache.rs: the SHA-256 of Go's encoding/gob of
// int128/kubelogin's tokencache.Key (pkg/tokencache/types.go, with oidc.Provider and
// tlsclientconfig.Config as kubelogin defines them), which names kubelogin's cache entries.
// Not run by the tests (they hold its output); to make new values: `go run kubelogin_cache_key.go`
// (Debian's golang-go; no module needed).
package main

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"sort"
)

type PKCEMethod int

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

type Config struct {
	CACertFilename []string
	CACertData     []string
	SkipTLSVerify  bool
	Renegotiation  tls.RenegotiationSupport
}

type Key struct {
	Provider               Provider
	TLSClientConfig        Config
	Username               string
	AuthRequestExtraParams map[string]string
}

func sum(k Key) (string, string) {
	s := sha256.New()
	var raw []byte
	w := &tee{s, &raw}
	if err := gob.NewEncoder(w).Encode(&k); err != nil {
		panic(err)
	}
	return hex.EncodeToString(s.Sum(nil)), hex.EncodeToString(raw)
}

type tee struct {
	h   interface{ Write([]byte) (int, error) }
	raw *[]byte
}

func (t *tee) Write(p []byte) (int, error) { *t.raw = append(*t.raw, p...); return t.h.Write(p) }

func main() {
	cases := []struct {
		name string
		key  Key
	}{
		{"minimal", Key{Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID"}}},
		{"full", Key{
			Provider: Provider{IssuerURL: "https://issuer.example.com", ClientID: "YOUR_CLIENT_ID", ClientSecret: "YOUR_CLIENT_SECRET",
				ExtraScopes: []string{"email", "profile"}, RedirectURL: "http://localhost:8000", PKCEMethod: 2, UseAccessToken: true,
				RequestHeaders: map[string]string{"Origin": "localhost:8080"}},
			TLSClientConfig: Config{CACertFilename: []string{"/home/u/.kube/ca.crt"}, CACertData: []string{"QUJD"}, SkipTLSVerify: true, Renegotiation: tls.RenegotiateOnceAsClient},
			Username:        "bob",
			AuthRequestExtraParams: map[string]string{"prompt": "login"},
		}},
		{"empty-map", Key{Provider: Provider{IssuerURL: "https://i", ClientID: "c"}, AuthRequestExtraParams: map[string]string{}}},
		{"pkce-no-freely", Key{Provider: Provider{IssuerURL: "https://i", ClientID: "c", PKCEMethod: 1}, TLSClientConfig: Config{Renegotiation: tls.RenegotiateFreelyAsClient}}},
		{"long-string", Key{Provider: Provider{IssuerURL: "https://login.example.com/" + string(make([]byte, 0)) + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/realms/k8s", ClientID: "ü-client"}}},
	}
	for _, c := range cases {
		h, raw := sum(c.key)
		fmt.Printf("%s %s %s\n", c.name, h, raw)
	}
	// Two entries: Go's map order is random; every order kubelogin may have written.
	seen := map[string]bool{}
	two := Key{Provider: Provider{IssuerURL: "https://i", ClientID: "c", RequestHeaders: map[string]string{"A": "1", "B": "2"}}, AuthRequestExtraParams: map[string]string{"x": "1", "y": "2"}}
	for i := 0; i < 2000; i++ {
		h, _ := sum(two)
		seen[h] = true
	}
	var hs []string
	for h := range seen {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	fmt.Println("two-maps", len(hs), hs)
}
