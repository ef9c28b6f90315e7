// Command apiserver-front stands for one control-plane node's API server in
// NICO's simulated workload clusters. The simulation runs one real
// kube-apiserver per cluster; a front on each control-plane node's address
// (port 6443, as a k3s or kubeadm server listens) makes every node look like
// a server of its own:
//
//   - GET /version answers the version that node runs, read from a file the
//     simulation rewrites when the node switches (a real server answers its
//     own build), so NICO can read each node's API server version;
//   - every other request is passed to the real kube-apiserver, the caller's
//     client certificate checked against the cluster CA and its identity
//     passed on the way Kubernetes' front proxies do (X-Remote-User and
//     X-Remote-Group, authenticated by the front's own client certificate:
//     kube-apiserver's --requestheader-* flags), watches streamed;
//   - a request without a client certificate gets 401, except /version,
//     which any API server answers to anyone (system:public-info-viewer).
//
// It needs nothing but Go's standard library. testing/front/install.sh builds
// it into a cache outside the repository; the simulation starts and stops it
// by PID.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"
)

type options struct {
	listen, cert, key, clientCA      string
	upstream, upstreamCA             string
	proxyCert, proxyKey, versionFile string
}

func main() {
	var o options
	flag.StringVar(&o.listen, "listen", "", "host:port to serve on")
	flag.StringVar(&o.cert, "cert", "", "serving certificate (PEM)")
	flag.StringVar(&o.key, "key", "", "serving key (PEM)")
	flag.StringVar(&o.clientCA, "client-ca", "", "CA that signs the clients' certificates (PEM)")
	flag.StringVar(&o.upstream, "upstream", "", "the real kube-apiserver, https://host:port")
	flag.StringVar(&o.upstreamCA, "upstream-ca", "", "CA of the real kube-apiserver's serving certificate (PEM)")
	flag.StringVar(&o.proxyCert, "proxy-cert", "", "the front's client certificate for the real kube-apiserver (PEM)")
	flag.StringVar(&o.proxyKey, "proxy-key", "", "its key (PEM)")
	flag.StringVar(&o.versionFile, "version-file", "", "file holding the version this node runs, such as v1.31.4")
	flag.Parse()
	server, err := newServer(o)
	if err != nil {
		log.Fatalf("apiserver-front: %v", err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		server.Close()
	}()
	if err := server.ListenAndServeTLS("", ""); err != nil && err != http.ErrServerClosed {
		log.Fatalf("apiserver-front: %v", err)
	}
}

func pool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return p, nil
}

func newServer(o options) (*http.Server, error) {
	for name, v := range map[string]string{"listen": o.listen, "cert": o.cert, "key": o.key, "client-ca": o.clientCA,
		"upstream": o.upstream, "upstream-ca": o.upstreamCA, "proxy-cert": o.proxyCert, "proxy-key": o.proxyKey,
		"version-file": o.versionFile} {
		if v == "" {
			return nil, fmt.Errorf("--%s is required", name)
		}
	}
	serving, err := tls.LoadX509KeyPair(o.cert, o.key)
	if err != nil {
		return nil, err
	}
	clients, err := pool(o.clientCA)
	if err != nil {
		return nil, err
	}
	upstreamCAs, err := pool(o.upstreamCA)
	if err != nil {
		return nil, err
	}
	proxyCert, err := tls.LoadX509KeyPair(o.proxyCert, o.proxyKey)
	if err != nil {
		return nil, err
	}
	target, err := url.Parse(o.upstream)
	if err != nil {
		return nil, err
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // watches stream: every write of the upstream is passed on at once
	proxy.Transport = &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: upstreamCAs, Certificates: []tls.Certificate{proxyCert}},
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		status(w, http.StatusBadGateway, "ServiceUnavailable", "the API server behind this node does not answer: "+err.Error())
	}
	return &http.Server{
		Addr:              o.listen,
		Handler:           handler(o.versionFile, proxy),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{serving},
			ClientCAs:    clients,
			ClientAuth:   tls.VerifyClientCertIfGiven,
			NextProtos:   []string{"http/1.1"},
		},
	}, nil
}

var versionPattern = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(\S*)$`)

func handler(versionFile string, proxy *httputil.ReverseProxy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" || r.URL.Path == "/version/" {
			serveVersion(w, versionFile)
			return
		}
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
			return
		}
		who := r.TLS.PeerCertificates[0].Subject
		for name := range r.Header {
			if strings.HasPrefix(strings.ToLower(name), "x-remote-") || strings.EqualFold(name, "Impersonate-User") {
				r.Header.Del(name) // a caller never names itself past the front
			}
		}
		r.Header.Set("X-Remote-User", who.CommonName)
		for _, group := range who.Organization {
			r.Header.Add("X-Remote-Group", group)
		}
		proxy.ServeHTTP(w, r)
	})
}

func serveVersion(w http.ResponseWriter, versionFile string) {
	raw, err := os.ReadFile(versionFile)
	text := strings.TrimSpace(string(raw))
	m := versionPattern.FindStringSubmatch(text)
	if err != nil || m == nil {
		status(w, http.StatusServiceUnavailable, "ServiceUnavailable", "this node's API server is not running")
		return
	}
	git := text
	if !strings.HasPrefix(git, "v") {
		git = "v" + git
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{
		"major": m[1], "minor": m[2], "gitVersion": git, "gitCommit": "", "gitTreeState": "clean",
		"buildDate": "2026-01-01T00:00:00Z", "goVersion": "go", "compiler": "gc", "platform": "linux/amd64",
	})
}

func status(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": message, "code": code,
	})
}
