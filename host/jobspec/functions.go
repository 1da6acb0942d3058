package jobspec

import (
	"errors"

	"github.com/hashicorp/go-cty-funcs/cidr"
	"github.com/hashicorp/go-cty-funcs/crypto"
	"github.com/hashicorp/go-cty-funcs/encoding"
	"github.com/hashicorp/go-cty-funcs/filesystem"
	"github.com/hashicorp/go-cty-funcs/uuid"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// ErrFilesystemDisabled is the error of file functions when the parse does
// not allow file system access (jobs parsed by the server).
var ErrFilesystemDisabled = errors.New("jobspec: file system functions are disabled here")

// functions returns the functions a jobspec may call: exactly those of
// Nomad's job language (jobspec2/functions.go), from go-cty's standard
// library and HashiCorp's go-cty-funcs. Terraform's regex, regexall and
// setsubtract are not among them: a jobspec that calls them fails in Nomad,
// and can() or try() around them gives another result there. File
// functions read relative to baseDir, and only when allowFS is set.
func functions(baseDir string, allowFS bool) map[string]function.Function {
	fs := func(f function.Function) function.Function {
		if allowFS {
			return f
		}
		return function.New(&function.Spec{
			Params: f.Params(), VarParam: f.VarParam(),
			Type: func([]cty.Value) (cty.Type, error) { return cty.DynamicPseudoType, ErrFilesystemDisabled },
			Impl: func([]cty.Value, cty.Type) (cty.Value, error) { return cty.DynamicVal, ErrFilesystemDisabled },
		})
	}
	return map[string]function.Function{
		"abs":             stdlib.AbsoluteFunc,
		"base64decode":    encoding.Base64DecodeFunc,
		"base64encode":    encoding.Base64EncodeFunc,
		"bcrypt":          crypto.BcryptFunc,
		"can":             tryfunc.CanFunc,
		"ceil":            stdlib.CeilFunc,
		"chomp":           stdlib.ChompFunc,
		"chunklist":       stdlib.ChunklistFunc,
		"cidrhost":        cidr.HostFunc,
		"cidrnetmask":     cidr.NetmaskFunc,
		"cidrsubnet":      cidr.SubnetFunc,
		"cidrsubnets":     cidr.SubnetsFunc,
		"coalesce":        stdlib.CoalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"convert":         typeexpr.ConvertFunc,
		"csvdecode":       stdlib.CSVDecodeFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"floor":           stdlib.FloorFunc,
		"format":          stdlib.FormatFunc,
		"formatdate":      stdlib.FormatDateFunc,
		"formatlist":      stdlib.FormatListFunc,
		"indent":          stdlib.IndentFunc,
		"index":           stdlib.IndexFunc,
		"join":            stdlib.JoinFunc,
		"jsondecode":      stdlib.JSONDecodeFunc,
		"jsonencode":      stdlib.JSONEncodeFunc,
		"keys":            stdlib.KeysFunc,
		"length":          stdlib.LengthFunc,
		"log":             stdlib.LogFunc,
		"lookup":          stdlib.LookupFunc,
		"lower":           stdlib.LowerFunc,
		"max":             stdlib.MaxFunc,
		"md5":             crypto.Md5Func,
		"merge":           stdlib.MergeFunc,
		"min":             stdlib.MinFunc,
		"parseint":        stdlib.ParseIntFunc,
		"pow":             stdlib.PowFunc,
		"range":           stdlib.RangeFunc,
		"regex_replace":   stdlib.RegexReplaceFunc,
		"replace":         stdlib.ReplaceFunc,
		"reverse":         stdlib.ReverseFunc,
		"rsadecrypt":      crypto.RsaDecryptFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      boundedSetProduct(stdlib.SetProductFunc),
		"setunion":        stdlib.SetUnionFunc,
		"sha1":            crypto.Sha1Func,
		"sha256":          crypto.Sha256Func,
		"sha512":          crypto.Sha512Func,
		"signum":          stdlib.SignumFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"split":           stdlib.SplitFunc,
		"strlen":          stdlib.StrlenFunc,
		"strrev":          stdlib.ReverseFunc,
		"substr":          stdlib.SubstrFunc,
		"timeadd":         stdlib.TimeAddFunc,
		"title":           stdlib.TitleFunc,
		"trim":            stdlib.TrimFunc,
		"trimprefix":      stdlib.TrimPrefixFunc,
		"trimspace":       stdlib.TrimSpaceFunc,
		"trimsuffix":      stdlib.TrimSuffixFunc,
		"try":             tryfunc.TryFunc,
		"upper":           stdlib.UpperFunc,
		"urlencode":       encoding.URLEncodeFunc,
		"uuidv4":          uuid.V4Func,
		"uuidv5":          uuid.V5Func,
		"values":          stdlib.ValuesFunc,
		"yamldecode":      ctyyaml.YAMLDecodeFunc,
		"yamlencode":      ctyyaml.YAMLEncodeFunc,
		"zipmap":          stdlib.ZipmapFunc,

		"abspath":    fs(filesystem.AbsPathFunc),
		"basename":   fs(filesystem.BasenameFunc),
		"dirname":    fs(filesystem.DirnameFunc),
		"file":       fs(filesystem.MakeFileFunc(baseDir, false)),
		"filebase64": fs(filesystem.MakeFileFunc(baseDir, true)),
		"fileexists": fs(filesystem.MakeFileExistsFunc(baseDir)),
		"fileset":    fs(filesystem.MakeFileSetFunc(baseDir)),
		"pathexpand": fs(filesystem.PathExpandFunc),
	}
}

// maxSetProduct bounds setproduct's result as stdlib's range bounds its
// own: range(1000) is allowed, but setproduct(range(1000), range(1000),
// range(1000)) asks for a billion elements, and the parse (the server's,
// for /v1/jobs/parse) ran out of memory and took the process down.
const maxSetProduct = 1024

// boundedSetProduct is setproduct refusing, before computing it, a
// product of more than maxSetProduct elements.
func boundedSetProduct(f function.Function) function.Function {
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type:        f.ReturnTypeForValues,
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if i, ok := productTooLarge(args); ok {
				return cty.DynamicVal, function.NewArgErrorf(i,
					"the product would have more than %d elements; use smaller sets", maxSetProduct)
			}
			return f.Call(args)
		},
	})
}

// productTooLarge reports whether the product of the sets has more than
// maxSetProduct elements, and the argument that takes it past that. An
// argument setproduct refuses, or does not know yet, counts as one element
// (setproduct says what is wrong with it); an empty one makes the product
// empty.
func productTooLarge(args []cty.Value) (int, bool) {
	lens := make([]int, len(args))
	for i, arg := range args {
		arg, _ = arg.Unmark()
		lens[i] = 1
		if arg.IsKnown() && !arg.IsNull() && arg.CanIterateElements() {
			lens[i] = arg.LengthInt()
		}
		if lens[i] == 0 {
			return 0, false
		}
	}
	n := 1
	for i, l := range lens {
		if n > maxSetProduct/l {
			return i, true
		}
		n *= l
	}
	return 0, false
}
