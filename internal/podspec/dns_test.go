package podspec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

var dnsCases = []string{
	"", "a", "0", "-", "a-", "-a", "a-b", "a--b", "pod-0b3f9c1e-4d2a-4f6b-9a51-7c2e8d1f0a33", "A", "aB", "a_b",
	"a.b", ".a", "a.", "a..b", "a.-b", "a-.b", "0.0.0.0", "my-pod.default.svc", "é", "a\n", "a b", "a/b",
	strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 253), strings.Repeat("a", 254),
	strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 126) + "ab", strings.Repeat("a", 100) + ".b",
}

// TestDNSChecksMatchTheAPI: the hand-written checks accept exactly what the API's accept, and the
// wrappers return the API's own messages.
func TestDNSChecksMatchTheAPI(t *testing.T) {
	for _, s := range dnsCases {
		assert.Equal(t, len(validation.IsDNS1123Label(s)) == 0, isDNS1123Label(s), "label %q", s)
		assert.Equal(t, len(validation.IsDNS1123Subdomain(s)) == 0, isDNS1123Subdomain(s), "subdomain %q", s)
		assert.Equal(t, validation.IsDNS1123Label(s), dns1123Label(s), "label %q", s)
		assert.Equal(t, validation.IsDNS1123Subdomain(s), dns1123Subdomain(s), "subdomain %q", s)
	}
}

func FuzzDNSChecksMatchTheAPI(f *testing.F) {
	for _, s := range dnsCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isDNS1123Label(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
			t.Fatalf("isDNS1123Label(%q) = %v, the API says %v", s, got, want)
		}
		if got, want := isDNS1123Subdomain(s), len(validation.IsDNS1123Subdomain(s)) == 0; got != want {
			t.Fatalf("isDNS1123Subdomain(%q) = %v, the API says %v", s, got, want)
		}
	})
}
