package yamlfile

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type config struct {
	Version string `yaml:"version"`
	Sharing struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"sharing"`
	Names []string `yaml:"names"`
}

func TestDecodeReadsOneDocumentStrictly(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		wantLine  int
		wantField string
		wantMsg   string // "" for success
	}{
		{"a file that fits the type decodes", "version: v1\nsharing:\n  replicas: 2\n", 0, "", ""},
		{"an unknown top-level key is refused at its line", "version: v1\nshare: {}\n", 2, "share", `unknown field "share"`},
		{"an unknown nested key is refused at its own line", "sharing:\n  replicas: 2\n  mps: true\n", 3, "mps", `unknown field "mps"`},
		{"a key given twice is refused at the second", "version: v1\nversion: v2\n", 2, "", `mapping key "version" already defined at line 1`},
		{"a value of the wrong type is refused at its line", "sharing:\n  replicas: many\n", 2, "", "cannot unmarshal !!str `many` into int"},
		{"a list for a mapping is refused", "sharing: [1]\n", 1, "", "cannot unmarshal !!seq into struct"},
		{"a syntax error keeps the line the library gives (where the list opens)", "version: v1\nnames: [a,\n", 2, "", "did not find expected node content"},
		{"a later document is not read by Decode", "version: v1\n---\nbogus: 1\n", 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c config
			doc, err := Decode("c.yaml", []byte(tt.yaml), &c)
			if tt.wantMsg == "" {
				if err != nil || doc == nil {
					t.Fatalf("Decode = %v, %v; want a document", doc, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode error %v (%T), want an *Error", err, err)
			}
			if e.File != "c.yaml" || e.Line != tt.wantLine || e.Field != tt.wantField || !strings.Contains(e.Msg, tt.wantMsg) {
				t.Errorf("got %+v, want line %d, field %q, message containing %q", *e, tt.wantLine, tt.wantField, tt.wantMsg)
			}
		})
	}
}

func TestDecodeKeepsTheValuesTheFileDoesNotSet(t *testing.T) {
	c := config{Version: "v1", Names: []string{"default"}}
	if _, err := Decode("c.yaml", []byte("sharing:\n  replicas: 3\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Version != "v1" || c.Sharing.Replicas != 3 || len(c.Names) != 1 {
		t.Errorf("Decode = %+v, want version v1 kept, replicas 3, names kept", c)
	}
}

func TestAFileWithoutADocumentIsEmpty(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		empty bool // ErrEmpty; else a document that IsNull
	}{
		{"no bytes hold no document", "", true},
		{"blank lines hold no document", "\n  \n", true},
		{"comments hold no document", "# nothing\n", true},
		{"a lone document marker is a null document", "---\n", false},
		{"an explicit null is a null document", "~\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, read := range []func() (*yaml.Node, error){
				func() (*yaml.Node, error) { return Parse("e.yaml", []byte(tt.yaml)) },
				func() (*yaml.Node, error) { return Decode("e.yaml", []byte(tt.yaml), &config{}) },
			} {
				doc, err := read()
				if tt.empty {
					if !errors.Is(err, ErrEmpty) || err.Error() != "e.yaml: file is empty" {
						t.Errorf("error %v, want ErrEmpty reading \"e.yaml: file is empty\"", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("error %v, want a null document", err)
				}
				if !IsNull(doc) {
					t.Errorf("document is not null")
				}
			}
		})
	}
}

func TestIsNull(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want bool
	}{
		{"an explicit null is null", "~\n", true},
		{"the word null is null", "null\n", true},
		{"an empty mapping is not null", "{}\n", false},
		{"a scalar is not null", "x\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse("n.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := IsNull(doc); got != tt.want {
				t.Errorf("IsNull = %v, want %v", got, tt.want)
			}
		})
	}
	if !IsNull(nil) {
		t.Error("IsNull(nil) = false, want true")
	}
}

func TestRestReadsTheDocumentsAfterTheFirst(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		wantLines []int // the line of each later document
		wantErr   string
	}{
		{"one document has no rest", "a: 1\n", nil, ""},
		{"a second document is returned at its line", "a: 1\n---\nb: 2\n", []int{2}, ""},
		{"a trailing marker is an empty document", "a: 1\n---\n", []int{2}, ""},
		{"documents up to a broken one come with its error", "a: 1\n---\nb: 2\n---\nc: [\n", []int{2}, "did not find expected node content"},
		{"a broken first document is reported too", "a: [\n", nil, "did not find expected node content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Rest("r.yaml", []byte(tt.yaml))
			var lines []int
			for _, d := range docs {
				lines = append(lines, d.Line)
			}
			if fmt.Sprint(lines) != fmt.Sprint(tt.wantLines) {
				t.Errorf("later documents at lines %v, want %v", lines, tt.wantLines)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLocateLineFindsALineTheLibraryOmits(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want int
	}{
		{"an error on the first line", "a: b: c\n", 1},
		{"the same error after many lines", strings.Repeat("# padding\n", 500) + "a: b: c\n", 501},
		{"a file without the problem has no line", "version: v1\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LocateLine([]byte(tt.yaml), "mapping values are not allowed", &config{}); got != tt.want {
				t.Errorf("LocateLine = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestAPanicOfTheParserBecomesAnError(t *testing.T) {
	read := func() (err error) {
		defer recoverInto("p.yaml", &err)
		panic("index out of range")
	}
	err := read()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrParserFailed) {
		t.Fatalf("error %v, want an *Error wrapping ErrParserFailed", err)
	}
	if want := "p.yaml: YAML parser failed: index out of range"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
