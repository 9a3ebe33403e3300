// Package redact leaves the contents of host files out of error messages.
package redact

import (
	"fmt"
	"strings"
)

// Quoted replaces every quoted span of an error message ("...", with Go's escapes, and
// `...`, the YAML library's) with its length. Parse errors quote what they could not parse,
// and facts' errors travel into acceptance records and `inventory --json`, readable in the
// cluster: a file's contents (a containerd config's registry password, a file a planted
// link pointed at) must not. The path and the problem stay; the operator reads the file.
func Quoted(msg string) string {
	if !strings.ContainsAny(msg, "\"`") {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c != '"' && c != '`' {
			b.WriteByte(c)
			continue
		}
		end := closing(msg, i)
		if end < 0 { // an unclosed quote: what follows may be content
			fmt.Fprintf(&b, "%c(%d bytes not shown)", c, len(msg)-i-1)
			break
		}
		fmt.Fprintf(&b, "%c(%d bytes not shown)%c", c, end-i-1, c)
		i = end
	}
	return b.String()
}

// closing is the index of the quote that closes the one at i, -1 when none does.
func closing(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case q == '"' && s[j] == '\\':
			j++
		case s[j] == q:
			return j
		}
	}
	return -1
}
