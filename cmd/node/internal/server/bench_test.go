package server

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkPodsUnderSlowloris measures GET /pods latency with no other client and with 800
// slowloris connections open; compare the two p99-ns figures of one run (the ratio, not the absolute
// numbers, is what this machine can say).
func BenchmarkPodsUnderSlowloris(b *testing.B) {
	for _, conns := range []int{0, 800} {
		b.Run("slowloris="+strconv.Itoa(conns), func(b *testing.B) {
			env := newEnv(b)
			base, _ := env.start(b, Options{})
			slowloris(b, base, conns)
			client := &http.Client{Timeout: 30 * time.Second}
			defer client.CloseIdleConnections()
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				resp, err := client.Get(base + "/pods")
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
		})
	}
}
