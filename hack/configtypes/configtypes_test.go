// Package configtypes checks a house rule of the library: a block's Config
// names the few methods it calls of another block (an interface), never
// that block's concrete type, so a host can replace any block alone; the
// interfaces a block declares return data, not another block's concrete
// type. It is a test only, run by make test with the library's tests.
package configtypes

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/nodekit/nodekit"

// skipDirs are not library packages.
var skipDirs = map[string]bool{"examples": true, "test": true, "conformance": true, "hack": true, "testdata": true, "docs": true}

type pkg struct {
	path  string
	files []*ast.File
	// structs are the package's struct type names; methods counts the
	// methods declared on each type.
	structs map[string]bool
	methods map[string]int
}

// load parses the non-test files of every library package below root.
func load(t *testing.T, root string) map[string]*pkg {
	t.Helper()
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		path := module
		if rel != "." {
			path += "/" + filepath.ToSlash(rel)
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pk := pkgs[path]
		if pk == nil {
			pk = &pkg{path: path, structs: map[string]bool{}, methods: map[string]int{}}
			pkgs[path] = pk
		}
		pk.files = append(pk.files, f)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil && len(fn.Recv.List) == 1 {
				recv := fn.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					pk.methods[id.Name]++
				}
			}
			if g, ok := decl.(*ast.GenDecl); ok {
				for _, s := range g.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						if _, isStruct := ts.Type.(*ast.StructType); isStruct {
							pk.structs[ts.Name.Name] = true
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// concrete reports whether expr is a pointer to a block of another library
// package than self (seen through the file's imports), and names it. A
// block is a struct type with methods; a struct without methods is data
// (pleg.PodStatus), and internal/ packages and …test fakes are not blocks.
func concrete(expr ast.Expr, imports map[string]string, self string, pkgs map[string]*pkg) (string, bool) {
	star, ok := expr.(*ast.StarExpr)
	if !ok {
		return "", false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	path, ok := imports[x.Name]
	if !ok || path == self || !strings.HasPrefix(path, module+"/") {
		return "", false
	}
	other := pkgs[path]
	if other == nil || !other.structs[sel.Sel.Name] || other.methods[sel.Sel.Name] == 0 ||
		isTestPackage(path) || strings.Contains(path, "/internal") {
		return "", false
	}
	return "*" + x.Name + "." + sel.Sel.Name, true
}

// isTestPackage: the fakes of a …test package may be named by anyone.
func isTestPackage(path string) bool {
	return strings.HasSuffix(path, "test")
}

func fileImports(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		out[name] = path
	}
	return out
}

// TestConfigsNameNoConcreteBlock: no field of a library Config struct, and
// no result of a method of a library interface, is a pointer to another
// library package's struct type.
func TestConfigsNameNoConcreteBlock(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal("not at the module root:", err)
	}
	pkgs := load(t, root)
	if len(pkgs) < 30 {
		t.Fatalf("found %d library packages under %s; the walk is wrong", len(pkgs), root)
	}
	var bad []string
	for _, pk := range pkgs {
		if isTestPackage(pk.path) {
			continue
		}
		for _, f := range pk.files {
			imports := fileImports(f)
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok || !ts.Name.IsExported() {
					return true
				}
				where := strings.TrimPrefix(pk.path, module+"/") + "." + ts.Name.Name
				switch typ := ts.Type.(type) {
				case *ast.StructType:
					if !strings.HasSuffix(ts.Name.Name, "Config") {
						return false
					}
					for _, fld := range typ.Fields.List {
						if len(fld.Names) > 0 && !fld.Names[0].IsExported() {
							continue
						}
						if name, ok := concrete(fld.Type, imports, pk.path, pkgs); ok {
							bad = append(bad, where+" field "+fieldName(fld)+" is "+name)
						}
					}
				case *ast.InterfaceType:
					for _, m := range typ.Methods.List {
						fn, ok := m.Type.(*ast.FuncType)
						if !ok || fn.Results == nil {
							continue
						}
						for _, r := range fn.Results.List {
							if name, ok := concrete(r.Type, imports, pk.path, pkgs); ok {
								bad = append(bad, where+" method "+fieldName(m)+" returns "+name)
							}
						}
					}
				}
				return false
			})
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("a block takes another block through the few methods it calls, not its concrete type:\n  %s", strings.Join(bad, "\n  "))
	}
}

// TestConstructorsWrapInvalidConfig: every library package with a
// constructor that takes a Config and can fail declares ErrInvalidConfig,
// the error its constructors wrap for a bad Config (errors.Is tells a
// host's mistake from a failure of the world).
func TestConstructorsWrapInvalidConfig(t *testing.T) {
	pkgs := load(t, "../..")
	var missing []string
	for _, pk := range pkgs {
		if isTestPackage(pk.path) || strings.Contains(pk.path, "/internal") {
			continue
		}
		var ctor string
		declares := false
		for _, f := range pk.files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && strings.HasPrefix(d.Name.Name, "New") && takesConfig(d.Type) && returnsError(d.Type) {
						ctor = d.Name.Name
					}
				case *ast.GenDecl:
					for _, sp := range d.Specs {
						if vs, ok := sp.(*ast.ValueSpec); ok {
							for _, n := range vs.Names {
								declares = declares || n.Name == "ErrInvalidConfig"
							}
						}
					}
				}
			}
		}
		if ctor != "" && !declares {
			missing = append(missing, strings.TrimPrefix(pk.path, module+"/")+"."+ctor)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("constructors of packages without ErrInvalidConfig:\n  %s", strings.Join(missing, "\n  "))
	}
}

func takesConfig(fn *ast.FuncType) bool {
	for _, p := range fn.Params.List {
		if id, ok := p.Type.(*ast.Ident); ok && strings.HasSuffix(id.Name, "Config") {
			return true
		}
	}
	return false
}

func returnsError(fn *ast.FuncType) bool {
	if fn.Results == nil {
		return false
	}
	for _, r := range fn.Results.List {
		if id, ok := r.Type.(*ast.Ident); ok && id.Name == "error" {
			return true
		}
	}
	return false
}

func fieldName(f *ast.Field) string {
	if len(f.Names) == 0 {
		return "(embedded)"
	}
	return f.Names[0].Name
}
