// Package temporalclient says how to reach a Temporal cluster — self-hosted behind TLS, or Temporal Cloud with mTLS or
// an API key — and turns that into the SDK's client options. The worker and the starter share it, so both take the
// same flags and read the same environment variables as the temporal CLI:
//
//	flag                  environment                                      meaning
//	--tls                 TEMPORAL_TLS                                     TLS with the system's roots (false: off)
//	--tls-cert-path       TEMPORAL_TLS_CLIENT_CERT_PATH (TEMPORAL_TLS_CERT) client certificate (mTLS), PEM
//	--tls-key-path        TEMPORAL_TLS_CLIENT_KEY_PATH (TEMPORAL_TLS_KEY)   its private key, PEM
//	--tls-ca-path         TEMPORAL_TLS_SERVER_CA_CERT_PATH (TEMPORAL_TLS_CA) CA that signed the server's certificate
//	--tls-server-name     TEMPORAL_TLS_SERVER_NAME                         server name to verify, when not the host
//	--api-key             TEMPORAL_API_KEY                                 API key (Temporal Cloud); turns TLS on
//
// The names in parentheses are the ones older temporal CLI releases read; they are accepted too. A flag wins over
// the environment. Any of the settings turns TLS on, unless TEMPORAL_TLS=false (a plaintext proxy). The API key is never printed: not in --help, not in a
// formatted Config, not in an error.
package temporalclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// Environment variables, as the temporal CLI names them.
const (
	EnvAddress       = "TEMPORAL_ADDRESS"
	EnvNamespace     = "TEMPORAL_NAMESPACE"
	EnvTLS           = "TEMPORAL_TLS"
	EnvTLSCert       = "TEMPORAL_TLS_CLIENT_CERT_PATH"
	EnvTLSKey        = "TEMPORAL_TLS_CLIENT_KEY_PATH"
	EnvTLSCA         = "TEMPORAL_TLS_SERVER_CA_CERT_PATH"
	EnvTLSServerName = "TEMPORAL_TLS_SERVER_NAME"
	EnvAPIKey        = "TEMPORAL_API_KEY"

	// Older names of the same settings, still read when the current ones are unset.
	EnvTLSCertLegacy = "TEMPORAL_TLS_CERT"
	EnvTLSKeyLegacy  = "TEMPORAL_TLS_KEY"
	EnvTLSCALegacy   = "TEMPORAL_TLS_CA"
)

// DefaultNamespace is the Temporal namespace when neither a flag nor EnvNamespace names one, as for the temporal
// CLI.
const DefaultNamespace = "default"

// EnvVars lists every environment variable this package reads.
var EnvVars = []string{EnvAddress, EnvNamespace, EnvTLS, EnvTLSCert, EnvTLSKey, EnvTLSCA, EnvTLSServerName, EnvAPIKey,
	EnvTLSCertLegacy, EnvTLSKeyLegacy, EnvTLSCALegacy}

// Secret is a string that formats as "[redacted]", so that a key in a Config never reaches a log or an error.
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return `"[redacted]"` }

// MarshalText keeps the secret out of JSON and YAML as well.
func (Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// Config is where a Temporal cluster is and how to authenticate to it.
type Config struct {
	// Address is the frontend's host:port (Temporal Cloud: <namespace>.<account>.tmprl.cloud:7233 for mTLS, or
	// the regional endpoint for API keys).
	Address   string
	Namespace string
	// TLS asks for TLS even when nothing below is set (the system's root CAs verify the server).
	TLS bool
	// TLSDisabled turns TLS off even with an API key (TEMPORAL_TLS=false, as the temporal CLI reads it): for a
	// plaintext proxy in front of the cluster. It cannot be combined with TLS settings.
	TLSDisabled bool
	// TLSCert and TLSKey are the files of a client certificate and its key, for mutual TLS.
	TLSCert, TLSKey string
	// TLSCA is a PEM file of the CA(s) that verify the server, instead of the system's roots.
	TLSCA string
	// TLSServerName is the name the server's certificate must carry, when it is not the address's host.
	TLSServerName string
	// APIKey authenticates to Temporal Cloud (sent as a bearer token; TLS is on).
	APIKey Secret
}

// UsesTLS reports whether connections use TLS: when asked to, or when any TLS setting or an API key is given.
func (c Config) UsesTLS() bool {
	if c.TLSDisabled {
		return false
	}
	return c.TLS || c.TLSCert != "" || c.TLSKey != "" || c.TLSCA != "" || c.TLSServerName != "" || c.APIKey != ""
}

// Auth says how the client authenticates, for logs: "api key", "mtls", "tls" or "none".
func (c Config) Auth() string {
	switch {
	case c.APIKey != "":
		return "api key"
	case c.TLSCert != "":
		return "mtls"
	case c.UsesTLS():
		return "tls"
	}
	return "none"
}

// TLSConfig loads the files the Config names. It returns nil when the connection is plain.
func (c Config) TLSConfig() (*tls.Config, error) {
	if c.TLSDisabled {
		if c.TLS || c.TLSCert != "" || c.TLSKey != "" || c.TLSCA != "" || c.TLSServerName != "" {
			return nil, fmt.Errorf("TLS: %s=false, but TLS settings are given", EnvTLS)
		}
		return nil, nil
	}
	if !c.UsesTLS() {
		return nil, nil
	}
	tc := &tls.Config{ServerName: c.TLSServerName, MinVersion: tls.VersionTLS12}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, errors.New("TLS: a client certificate needs its key and a key its certificate (--tls-cert-path with --tls-key-path)")
	}
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("TLS: load client certificate %s and key %s: %w", c.TLSCert, c.TLSKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("TLS: read server CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS: server CA %s holds no PEM certificate", c.TLSCA)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// ClientOptions are the SDK's options for this Config, with logger as the client's logger.
func (c Config) ClientOptions(logger log.Logger) (client.Options, error) {
	tc, err := c.TLSConfig()
	if err != nil {
		return client.Options{}, err
	}
	o := client.Options{
		HostPort:          c.Address,
		Namespace:         c.Namespace,
		Logger:            logger,
		ConnectionOptions: client.ConnectionOptions{TLS: tc},
	}
	if c.APIKey != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(string(c.APIKey))
		// The SDK turns TLS on for an API key unless told not to.
		o.ConnectionOptions.TLSDisabled = c.TLSDisabled
	}
	return o, nil
}

// FlagSet is what Flags registers on: the standard library's *flag.FlagSet and pflag's *FlagSet both are one.
type FlagSet interface {
	StringVar(p *string, name, value, usage string)
	BoolVar(p *bool, name string, value bool, usage string)
}

// Flags are the TLS and API key flags. Their defaults are empty, so that --help shows no value taken from the
// environment (the API key above all); Config reads the environment for what the command line leaves unset.
type Flags struct {
	tls                                       bool
	tlsCert, tlsKey, tlsCA, tlsServer, apiKey string
}

// Register adds the flags to fs.
func (f *Flags) Register(fs FlagSet) {
	fs.BoolVar(&f.tls, "tls", false, "connect to Temporal with TLS (env "+EnvTLS+"; on when any TLS flag or an API key is given)")
	fs.StringVar(&f.tlsCert, "tls-cert-path", "", "client certificate for mutual TLS, PEM (env "+EnvTLSCert+")")
	fs.StringVar(&f.tlsKey, "tls-key-path", "", "private key of the client certificate, PEM (env "+EnvTLSKey+")")
	fs.StringVar(&f.tlsCA, "tls-ca-path", "", "CA certificate that verifies the server, PEM; default: the system's roots (env "+EnvTLSCA+")")
	fs.StringVar(&f.tlsServer, "tls-server-name", "", "server name to verify, when not the address's host (env "+EnvTLSServerName+")")
	fs.StringVar(&f.apiKey, "api-key", "", "Temporal Cloud API key; prefer the environment, which no process listing shows (env "+EnvAPIKey+")")
}

// Args are the flags given, as a command line repeats them: the TLS ones, never the API key (a key belongs in
// the environment, where a pasted command line takes it from: EnvAPIKey).
func (f *Flags) Args() []string {
	var out []string
	if f.tls {
		out = append(out, "--tls")
	}
	for _, a := range []struct{ name, v string }{{"--tls-cert-path", f.tlsCert}, {"--tls-key-path", f.tlsKey},
		{"--tls-ca-path", f.tlsCA}, {"--tls-server-name", f.tlsServer}} {
		if a.v != "" {
			out = append(out, a.name, a.v)
		}
	}
	return out
}

// Config combines the flags with the environment (getenv: os.Getenv in production) into a Config for address
// and namespace. An unparsable TEMPORAL_TLS is an error.
func (f *Flags) Config(address, namespace string, getenv func(string) string) (Config, error) {
	c := Config{
		Address:       address,
		Namespace:     namespace,
		TLS:           f.tls,
		TLSCert:       first(f.tlsCert, getenv(EnvTLSCert), getenv(EnvTLSCertLegacy)),
		TLSKey:        first(f.tlsKey, getenv(EnvTLSKey), getenv(EnvTLSKeyLegacy)),
		TLSCA:         first(f.tlsCA, getenv(EnvTLSCA), getenv(EnvTLSCALegacy)),
		TLSServerName: first(f.tlsServer, getenv(EnvTLSServerName)),
		APIKey:        Secret(first(f.apiKey, getenv(EnvAPIKey))),
	}
	if v := getenv(EnvTLS); v != "" && !f.tls {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("%s=%q: want true or false", EnvTLS, v)
		}
		c.TLS, c.TLSDisabled = on, !on
	}
	return c, nil
}

// WithoutOwnVariables returns getenv blind to the variables this package reads and to extra (the results
// store's DSN, say). A spec names the variable its model's API key is read from (api_key_env), and whoever starts
// a workflow writes the spec: the lookup that serves specs must never hand out TEMPORAL_API_KEY, which would then
// be sent to the spec's endpoint.
func WithoutOwnVariables(getenv func(string) string, extra ...string) func(string) string {
	return func(name string) string {
		if slices.Contains(EnvVars, name) || slices.Contains(extra, name) {
			return ""
		}
		return getenv(name)
	}
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
