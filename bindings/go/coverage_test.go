package dg

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notWrapped lists functions of dg.h this package does not call from Go, each with the reason.
// Keep it short: a function belongs here only when its job is done another way.
var notWrapped = map[string]string{
	// Read in C by every wrapper of calls.h, in the same call as the failure; Error.Message holds it.
	"dg_last_error": "read inside calls.h",
}

var (
	blockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	lineComment  = regexp.MustCompile(`//[^\n]*`)
	declaration  = regexp.MustCompile(`DG_API[^;(]*?\b(dg_\w+)\s*\(`)
)

// headerFunctions returns the names of the functions dg.h declares.
func headerFunctions(t *testing.T) []string {
	text, err := os.ReadFile(filepath.Join("..", "..", "include", "dg.h"))
	if err != nil {
		t.Fatal(err)
	}
	code := lineComment.ReplaceAllString(blockComment.ReplaceAllString(string(text), ""), "")
	var names []string
	for _, line := range strings.Split(code, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			code = strings.Replace(code, line, "", 1) // preprocessor lines define DG_API itself
		}
	}
	for _, m := range declaration.FindAllStringSubmatch(code, -1) {
		names = append(names, m[1])
	}
	if len(names) < 40 {
		t.Fatalf("found only %d functions in dg.h: the parser is wrong", len(names))
	}
	return names
}

// packageCode returns the code of the package's non-test Go files, comment lines dropped.
func packageCode(t *testing.T) string {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(text), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "//") {
				b.WriteString(line + "\n")
			}
		}
	}
	return b.String()
}

// Every function of dg.h is called by the package (directly, or through its calls.h wrapper): a
// function added to the header fails this test until the binding covers it.
func TestEveryHeaderFunctionIsReachable(t *testing.T) {
	code := packageCode(t)
	functions := headerFunctions(t)
	declared := map[string]bool{}
	for _, name := range functions {
		declared[name] = true
		if _, ok := notWrapped[name]; ok {
			continue
		}
		uses := regexp.MustCompile(`\bC\.(dgw_` + regexp.QuoteMeta(strings.TrimPrefix(name, "dg_")) + `|` +
			regexp.QuoteMeta(name) + `)\b`)
		if !uses.MatchString(code) {
			t.Errorf("no function or method of package dg calls %s", name)
		}
	}
	for name := range notWrapped {
		if !declared[name] {
			t.Errorf("notWrapped names %s, which dg.h no longer declares", name)
		}
	}
}

// calls.h is generated from dg.h by bindings/generate.py; this fails, with the diff, when it is stale.
func TestGeneratedWrappersMatchHeader(t *testing.T) {
	out, err := exec.Command("python3", filepath.Join("..", "generate.py"), "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("bindings are out of date with include/dg.h (run python3 bindings/generate.py): %v\n%s", err, out)
	}
}
