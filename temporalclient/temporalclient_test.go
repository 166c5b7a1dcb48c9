package temporalclient

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// env is a fake environment.
type env map[string]string

func (e env) get(k string) string { return e[k] }

func parse(t *testing.T, args []string, e env) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var f Flags
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return f.Config("host:7233", "ns", e.get)
}

func TestConfigFromFlagsAndEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  env
		want Config
	}{
		{"nothing", nil, nil, Config{}},
		{"environment", nil, env{EnvTLSCert: "c.pem", EnvTLSKey: "k.pem", EnvTLSCA: "ca.pem", EnvTLSServerName: "srv", EnvAPIKey: "key", EnvTLS: "true"},
			Config{TLS: true, TLSCert: "c.pem", TLSKey: "k.pem", TLSCA: "ca.pem", TLSServerName: "srv", APIKey: "key"}},
		{"older names", nil, env{EnvTLSCertLegacy: "c.pem", EnvTLSKeyLegacy: "k.pem", EnvTLSCALegacy: "ca.pem"},
			Config{TLSCert: "c.pem", TLSKey: "k.pem", TLSCA: "ca.pem"}},
		{"current names win over older", nil, env{EnvTLSCert: "new.pem", EnvTLSCertLegacy: "old.pem"}, Config{TLSCert: "new.pem"}},
		{"TLS off in the environment", nil, env{EnvTLS: "false", EnvAPIKey: "key"}, Config{TLSDisabled: true, APIKey: "key"}},
		{"flags win over environment",
			[]string{"--tls", "--tls-cert-path", "fc", "--tls-key-path", "fk", "--tls-ca-path", "fca", "--tls-server-name", "fs", "--api-key", "fkey"},
			env{EnvTLSCert: "c", EnvTLSKey: "k", EnvTLSCA: "ca", EnvTLSServerName: "s", EnvAPIKey: "key", EnvTLS: "false"},
			// --tls wins over TEMPORAL_TLS=false
			Config{TLS: true, TLSCert: "fc", TLSKey: "fk", TLSCA: "fca", TLSServerName: "fs", APIKey: "fkey"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(t, tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Address, tc.want.Namespace = "host:7233", "ns"
			if got != tc.want {
				t.Fatalf("got %#v\nwant %#v (API keys %t)", got, tc.want, got.APIKey == tc.want.APIKey)
			}
		})
	}
	if _, err := parse(t, nil, env{EnvTLS: "yes please"}); err == nil || !strings.Contains(err.Error(), EnvTLS) {
		t.Fatalf("unparsable %s: got %v, want an error naming it", EnvTLS, err)
	}
}

func TestClientOptions(t *testing.T) {
	plain := Config{Address: "h:7233", Namespace: "ns"}
	o, err := plain.ClientOptions(nil)
	if err != nil || o.HostPort != "h:7233" || o.Namespace != "ns" || o.ConnectionOptions.TLS != nil || o.Credentials != nil {
		t.Fatalf("plain: %+v, %v; want host, namespace, no TLS, no credentials", o, err)
	}
	if plain.Auth() != "none" {
		t.Fatalf("plain Auth() = %q", plain.Auth())
	}
	cloud := Config{Address: "region.api.temporal.io:7233", Namespace: "ns.acct", APIKey: "k"}
	o, err = cloud.ClientOptions(nil)
	if err != nil || o.ConnectionOptions.TLS == nil || o.Credentials == nil {
		t.Fatalf("API key: %+v, %v; want TLS and credentials", o, err)
	}
	if cloud.Auth() != "api key" {
		t.Fatalf("API key Auth() = %q", cloud.Auth())
	}
	proxy := Config{Address: "proxy:7233", APIKey: "k", TLSDisabled: true}
	o, err = proxy.ClientOptions(nil)
	if err != nil || o.ConnectionOptions.TLS != nil || !o.ConnectionOptions.TLSDisabled || o.Credentials == nil || proxy.UsesTLS() {
		t.Fatalf("API key with TLS off: %+v, %v; want credentials and TLS disabled", o.ConnectionOptions, err)
	}
	if _, err := (Config{TLSDisabled: true, TLSCA: "ca.pem"}).ClientOptions(nil); err == nil {
		t.Fatal("TLS off with a CA given: got nil error")
	}
	if o, err := (Config{TLS: true, TLSServerName: "srv"}).ClientOptions(nil); err != nil || o.ConnectionOptions.TLS.ServerName != "srv" {
		t.Fatalf("--tls --tls-server-name: %+v, %v", o.ConnectionOptions.TLS, err)
	}
}

// pki is a CA with a server and a client certificate it signed, written as PEM files.
type pki struct {
	ca, serverCert, serverKey, clientCert, clientKey string
	pool                                             *x509.CertPool
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "silico test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (certPath, keyPath string) {
		k := key()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+".key", "EC PRIVATE KEY", kder)
	}
	p := pki{ca: write("ca.pem", "CERTIFICATE", caDER), pool: x509.NewCertPool()}
	p.pool.AddCert(caCert)
	p.serverCert, p.serverKey = leaf(2, "temporal.internal", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf(3, "silico-worker", x509.ExtKeyUsageClientAuth)
	return p
}

// handshake runs a mutual-TLS handshake between a loopback server that demands a client certificate signed by
// the test CA and a client using tc.
func handshake(t *testing.T, p pki, tc *tls.Config) error {
	t.Helper()
	srvCert, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{srvCert}, ClientCAs: p.pool, ClientAuth: tls.RequireAndVerifyClientCert,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		srvErr <- c.(*tls.Conn).Handshake()
	}()
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), tc)
	if err == nil {
		// The server checks the client's certificate after the client's side of the handshake is done.
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Read(make([]byte, 1))
		if err != nil && strings.Contains(err.Error(), "EOF") {
			err = nil
		}
		c.Close()
	}
	if serr := <-srvErr; err == nil {
		err = serr
	}
	return err
}

func TestTLSConfigFromGeneratedCertificates(t *testing.T) {
	p := newPKI(t)
	c := Config{TLSCert: p.clientCert, TLSKey: p.clientKey, TLSCA: p.ca, TLSServerName: "temporal.internal"}
	if c.Auth() != "mtls" {
		t.Fatalf("Auth() = %q, want mtls", c.Auth())
	}
	tc, err := c.TLSConfig()
	if err != nil {
		t.Fatalf("TLSConfig: %v", err)
	}
	if len(tc.Certificates) != 1 || tc.RootCAs == nil || tc.ServerName != "temporal.internal" {
		t.Fatalf("TLSConfig = %+v; want the client certificate, the CA and the server name", tc)
	}
	if err := handshake(t, p, tc); err != nil {
		t.Fatalf("mutual TLS handshake with the loaded config: %v", err)
	}
	// Each piece matters: a wrong server name, no CA, or no client certificate fails the handshake.
	for name, bad := range map[string]Config{
		"wrong server name": {TLSCert: p.clientCert, TLSKey: p.clientKey, TLSCA: p.ca, TLSServerName: "other.internal"},
		"system roots":      {TLSCert: p.clientCert, TLSKey: p.clientKey, TLSServerName: "temporal.internal"},
		"no client cert":    {TLSCA: p.ca, TLSServerName: "temporal.internal"},
	} {
		tc, err := bad.TLSConfig()
		if err != nil {
			t.Fatalf("%s: TLSConfig: %v", name, err)
		}
		if err := handshake(t, p, tc); err == nil {
			t.Errorf("%s: handshake succeeded, want a failure", name)
		}
	}
}

func TestTLSConfigErrors(t *testing.T) {
	p := newPKI(t)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Config{
		"cert without key":    {TLSCert: p.clientCert},
		"key without cert":    {TLSKey: p.clientKey},
		"key of another cert": {TLSCert: p.clientCert, TLSKey: p.serverKey},
		"missing CA file":     {TLSCA: filepath.Join(t.TempDir(), "nope.pem")},
		"CA file without PEM": {TLSCA: notPEM},
	} {
		if _, err := c.ClientOptions(nil); err == nil {
			t.Errorf("%s: got nil error", name)
		}
	}
}

func TestAPIKeyIsNeverPrinted(t *testing.T) {
	const key = "tmprl-api-key-that-must-not-leak"
	c, err := parse(t, nil, env{EnvAPIKey: key})
	if err != nil || string(c.APIKey) != key {
		t.Fatalf("API key from the environment: %v", err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%v", c.APIKey), fmt.Sprint(c.APIKey),
		fmt.Sprintf("%q", c.APIKey), string(b)} {
		if strings.Contains(s, key) {
			t.Errorf("formatted Config shows the key: %s", s)
		}
	}
	// --help shows no default taken from the environment.
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	var f Flags
	f.Register(fs)
	_ = fs.Parse([]string{"--help"})
	if !strings.Contains(help.String(), "-api-key") || strings.Contains(help.String(), key) {
		t.Errorf("--help: %s", help.String())
	}
	// Nor does an error about the rest of the configuration.
	c.TLSCert = "missing.pem"
	if _, err := c.ClientOptions(nil); err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("error: %v", err)
	}
}

func TestWithoutOwnVariables(t *testing.T) {
	e := env{EnvAPIKey: "cloud-key", "SILICO_STORE": "postgres://u:pw@h/db", "OPENAI_API_KEY": "sk-model", EnvTLSKey: "k.pem"}
	get := WithoutOwnVariables(e.get, "SILICO_STORE")
	for name, want := range map[string]string{EnvAPIKey: "", "SILICO_STORE": "", EnvTLSKey: "", "OPENAI_API_KEY": "sk-model"} {
		if got := get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestArgsRepeatTheTLSFlagsNeverTheKey(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var f Flags
	f.Register(fs)
	if err := fs.Parse([]string{"--tls-ca-path", "ca.pem", "--api-key", "secret-key", "--tls-server-name", "t.example"}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(f.Args(), " ")
	if got != "--tls-ca-path ca.pem --tls-server-name t.example" {
		t.Errorf("Args = %q", got)
	}
	if strings.Contains(got, "secret-key") {
		t.Error("Args repeats the API key")
	}
}
