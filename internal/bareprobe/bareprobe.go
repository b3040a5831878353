// Package bareprobe is the floor of a Go HTTP and TCP prober that the benchmarks compare
// probeactor against (tests/bench's impl=bare, tests/nodebench's bare client): kubelet's GET with
// one net/http client and nothing else. It is test tooling; node never imports it.
package bareprobe

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/probeactor/probeactor/probes"
)

// NewClient is the HTTP client of a bare prober: probes' timeout, no proxy, no keep-alive (a fresh
// connection per probe, as kubelet's), no compression, probes' response header limit, and
// connections reset on close (ResetDialer).
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            ResetDialer(0),
			DisableKeepAlives:      true,
			DisableCompression:     true,
			MaxResponseHeaderBytes: probes.DefaultMaxResponseHeaderBytes,
		},
	}
}

// Get is one HTTP probe: GET with kubelet's User-Agent and Accept, the body read into buf (its
// length is the limit), success for a status from 200 to 399.
func Get(client *http.Client, url string, buf []byte) bool {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", probes.UserAgent)
	req.Header.Set("Accept", "*/*")
	res, err := client.Do(req)
	if err != nil {
		return false
	}
	_, err = io.ReadFull(res.Body, buf)
	_ = res.Body.Close()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false
	}
	return res.StatusCode >= 200 && res.StatusCode < 400
}

// ResetDialer dials as node's probes do (timeout 0: none): the connection is reset on close,
// leaving no TIME_WAIT on either side (thousands of connections a second would otherwise fill the
// ephemeral ports within a minute).
func ResetDialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return resetConn{conn.(*net.TCPConn)}, nil
	}
}

type resetConn struct{ *net.TCPConn }

func (c resetConn) Close() error {
	_ = c.SetLinger(0)
	return c.TCPConn.Close()
}
