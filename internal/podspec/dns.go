package podspec

import "k8s.io/apimachinery/pkg/util/validation"

// dns1123Label is validation.IsDNS1123Label: its messages for a name it refuses, nil otherwise.
// A name is checked by hand first and handed to the API's regular expression only when it is
// refused, for the API's own messages: the expression was 60 % of Validate's CPU, and Validate is
// part of every AddPod on the caller's goroutine (TestDNSChecksMatchTheAPI checks both ways).
func dns1123Label(s string) []string {
	if isDNS1123Label(s) {
		return nil
	}
	return validation.IsDNS1123Label(s)
}

// dns1123Subdomain is validation.IsDNS1123Subdomain, with the same fast path as dns1123Label.
func dns1123Subdomain(s string) []string {
	if isDNS1123Subdomain(s) {
		return nil
	}
	return validation.IsDNS1123Subdomain(s)
}

// isDNS1123Label reports whether s is a DNS-1123 label: 1-63 characters of [a-z0-9-], starting
// and ending with a letter or digit.
func isDNS1123Label(s string) bool {
	return len(s) <= validation.DNS1123LabelMaxLength && isLabelPart(s)
}

// isDNS1123Subdomain reports whether s is a DNS-1123 subdomain: at most 253 characters, one or more
// dot-separated parts, each of [a-z0-9-] starting and ending with a letter or digit (no length
// limit per part: the API's expression has none).
func isDNS1123Subdomain(s string) bool {
	if len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if !isLabelPart(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

func isLabelPart(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
