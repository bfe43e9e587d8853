package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// serverCertificate is a fresh self-signed certificate per run, valid for 127.0.0.1, ::1 and localhost,
// so a client can trust it as its CA (host name verified) or pin its SHA-256 thumbprint. Upstream's
// default is Go's shared httptest certificate, which every test binary in the world also trusts.
type serverCertificate struct {
	keyPair          tls.Certificate
	pemFile          string
	thumbprintSHA256 string // lower-case hex over the DER certificate, no separators
	ownDir           string
}

func newServerCertificate(dir string) (*serverCertificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "vcsim.localhost", Organization: []string{"HCP tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}

	c := &serverCertificate{
		keyPair: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
	sum := sha256.Sum256(der)
	c.thumbprintSHA256 = hex.EncodeToString(sum[:])

	if dir == "" {
		if dir, err = os.MkdirTemp("", "vcsim-cert-"); err != nil {
			return nil, err
		}
		c.ownDir = dir
	}
	c.pemFile = filepath.Join(dir, "vcsim-ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(c.pemFile, pemBytes, 0o644); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *serverCertificate) tlsConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.keyPair}, MinVersion: tls.VersionTLS12}
}

func (c *serverCertificate) remove() {
	if c.ownDir != "" {
		_ = os.RemoveAll(c.ownDir)
	} else {
		_ = os.Remove(c.pemFile)
	}
}
