package sdk_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// TestDoc_ReferencesResolve: the SDK's comments are what plugin authors
// read (go doc); a field or method they name on the SDK's main types must
// exist, and they must not send readers to documents outside the
// repository ("seed 002").
func TestDoc_ReferencesResolve(t *testing.T) {
	types := map[string]reflect.Type{}
	for _, v := range []any{&sdk.Evaluation{}, &sdk.Job{}, &sdk.TaskGroup{}, &sdk.Allocation{}, &sdk.Node{},
		&sdk.Plan{}, &sdk.PlanResult{}, &sdk.Deployment{}, &sdk.Context{}} {
		types[reflect.TypeOf(v).Elem().Name()] = reflect.TypeOf(v)
	}
	names := strings.Join(keys(types), "|")
	// In package sdk a type is named as is; elsewhere as sdk.Type, and an
	// unqualified Plan is the package's own (stack.Plan).
	local := regexp.MustCompile(`(?:^|[^.\w])(` + names + `)\.([A-Z]\w*)`)
	qualified := regexp.MustCompile(`\bsdk\.(` + names + `)\.([A-Z]\w*)`)
	outside := regexp.MustCompile(`\bseed \d{3}\b`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			text := cg.Text()
			if m := outside.FindString(text); m != "" {
				t.Errorf("%s: comment refers to %q, which plugin authors cannot read", path, m)
			}
			ref := qualified
			if filepath.Dir(path) == "." {
				ref = local
			}
			for _, m := range ref.FindAllStringSubmatch(text, -1) {
				typ := types[m[1]]
				if _, ok := typ.Elem().FieldByName(m[2]); ok {
					continue
				}
				if _, ok := typ.MethodByName(m[2]); ok {
					continue
				}
				t.Errorf("%s: comment names %s.%s, which does not exist", path, m[1], m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string]reflect.Type) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
