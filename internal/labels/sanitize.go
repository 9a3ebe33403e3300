package labels

import (
	"strings"
	"unicode"
)

// MaxValueLen is the longest valid Kubernetes label value.
const MaxValueLen = 63

// ValidValue reports whether s is a valid Kubernetes label value: empty, or at most 63
// characters of [A-Za-z0-9._-] that begin and end with an alphanumeric character.
func ValidValue(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > MaxValueLen || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isValueChar(s[i]) {
			return false
		}
	}
	return true
}

// SanitizeValue turns s into a valid label value the way GFD turns a product name into
// one, then enforces what GFD does not: every character outside [A-Za-z0-9._-] and
// whitespace is dropped, runs of whitespace become one "-", the result is cut to 63
// characters and stripped of non-alphanumeric characters at both ends. It returns "" when
// nothing valid is left. A valid value without spaces comes back unchanged.
func SanitizeValue(s string) string {
	var b strings.Builder
	pendingSep := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			pendingSep = b.Len() > 0
		case r < 0x80 && isValueChar(byte(r)):
			if pendingSep {
				b.WriteByte('-')
				pendingSep = false
			}
			b.WriteRune(r)
		}
	}
	return trimValue(b.String(), MaxValueLen)
}

// trimValue cuts an already-filtered value to max bytes and strips non-alphanumeric
// characters at both ends.
func trimValue(s string, maxLen int) string {
	if len(s) > maxLen {
		s = s[:maxLen]
	}
	start, end := 0, len(s)
	for start < end && !isAlnum(s[start]) {
		start++
	}
	for end > start && !isAlnum(s[end-1]) {
		end--
	}
	return s[start:end]
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isValueChar(c byte) bool {
	return isAlnum(c) || c == '-' || c == '_' || c == '.'
}

// keepValid drops every label whose value is not a valid label value, so that a
// surprising input can cost a label but never publish garbage.
func keepValid(labels map[string]string) map[string]string {
	for k, v := range labels {
		if !ValidValue(v) {
			delete(labels, k)
		}
	}
	return labels
}
