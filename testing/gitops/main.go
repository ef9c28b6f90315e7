// Command gitops-check reads Kubernetes objects and says how three GitOps
// readers see them: the kstatus library (sigs.k8s.io/cli-utils, which Flux
// and kubectl-style waiters use), a Flux Kustomization healthCheckExprs entry
// evaluated with cel-go, and an Argo CD health check evaluated with
// gopher-lua. NICO's tests run it against live objects.
//
// Protocol: one JSON request per stdin line,
//
//	{"object": {...}, "flux": {"current": "...", "inProgress": "...", "failed": "..."}, "lua": "..."}
//
// and one JSON answer per stdout line,
//
//	{"kstatus": {"status": "InProgress", "message": "..."}, "flux": {"status": "Current"}, "argo": {"status": "Healthy", "message": "..."}}
//
// "flux" and "argo" are present only when the request carries expressions or
// a script; an evaluation error is reported in their "error" field.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type fluxExprs struct {
	Current    string `json:"current"`
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
}

type request struct {
	Object json.RawMessage `json:"object"`
	Flux   *fluxExprs      `json:"flux,omitempty"`
	Lua    string          `json:"lua,omitempty"`
}

type verdict struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

type answer struct {
	Kstatus verdict  `json:"kstatus"`
	Flux    *verdict `json:"flux,omitempty"`
	Argo    *verdict `json:"argo,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		var ans answer
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			ans.Kstatus = verdict{Error: fmt.Sprintf("bad request: %v", err)}
		} else {
			ans = evaluate(req)
		}
		if err := out.Encode(ans); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func evaluate(req request) answer {
	var ans answer
	// Whole numbers become int64, as in the objects a Kubernetes client hands these readers.
	obj := map[string]any{}
	if err := utiljson.Unmarshal(req.Object, &obj); err != nil {
		ans.Kstatus = verdict{Error: fmt.Sprintf("bad object: %v", err)}
		return ans
	}
	u := &unstructured.Unstructured{Object: obj}
	if res, err := status.Compute(u); err != nil {
		ans.Kstatus = verdict{Error: err.Error()}
	} else {
		ans.Kstatus = verdict{Status: res.Status.String(), Message: res.Message}
	}
	if req.Flux != nil {
		v := fluxStatus(obj, *req.Flux)
		ans.Flux = &v
	}
	if req.Lua != "" {
		v := argoHealth(obj, req.Lua)
		ans.Argo = &v
	}
	return ans
}

// fluxStatus follows the evaluation order of Flux's RFC 0009: a status whose
// observedGeneration lags metadata.generation is InProgress; otherwise the
// first of inProgress, failed, current that holds; otherwise InProgress. The
// environment has the options kustomize-controller enables, and the object's
// top-level fields are the variables.
func fluxStatus(obj map[string]any, e fluxExprs) verdict {
	if e.Current == "" {
		return verdict{Error: "the current expression is required"}
	}
	if gen, ok, _ := unstructured.NestedInt64(obj, "metadata", "generation"); ok {
		if seen, found, _ := unstructured.NestedInt64(obj, "status", "observedGeneration"); found && seen != gen {
			return verdict{Status: "InProgress", Message: "observedGeneration lags metadata.generation"}
		}
	}
	for _, step := range []struct{ expr, result string }{
		{e.InProgress, "InProgress"},
		{e.Failed, "Failed"},
		{e.Current, "Current"},
	} {
		if step.expr == "" {
			continue
		}
		ok, err := celBool(step.expr, obj)
		if err != nil {
			return verdict{Error: err.Error()}
		}
		if ok {
			return verdict{Status: step.result}
		}
	}
	return verdict{Status: "InProgress", Message: "no expression holds"}
}

func celBool(expr string, obj map[string]any) (bool, error) {
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
	if err != nil {
		return false, err
	}
	ast, issues := env.Parse(expr)
	if issues != nil && issues.Err() != nil {
		return false, fmt.Errorf("parsing %q: %w", expr, issues.Err())
	}
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
	if err != nil {
		return false, err
	}
	val, _, err := prog.ContextEval(context.Background(), obj)
	if err != nil {
		return false, fmt.Errorf("evaluating %q: %w", expr, err)
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, fmt.Errorf("%q is not a boolean expression", expr)
	}
	return bool(b), nil
}

// argoHealth runs a health script the way Argo CD runs one from argocd-cm:
// only the package, base and table libraries are open, the object is the
// global obj, and the script must return a table whose status is one of
// Argo CD's health codes.
func argoHealth(obj map[string]any, script string) verdict {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage,
		lua.BaseLibName: lua.OpenBase,
		lua.TabLibName:  lua.OpenTable,
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			return verdict{Error: err.Error()}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return verdict{Error: err.Error()}
	}
	tbl, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return verdict{Error: fmt.Sprintf("the script returned %s, not a table", l.Get(-1).Type())}
	}
	st := lua.LVAsString(tbl.RawGetString("status"))
	switch st {
	case "Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown":
	default:
		return verdict{Error: fmt.Sprintf("invalid health status %q", st)}
	}
	return verdict{Status: st, Message: lua.LVAsString(tbl.RawGetString("message"))}
}

func toLua(l *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case []any:
		t := l.CreateTable(len(x), 0)
		for _, item := range x {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(x))
		for k, item := range x {
			t.RawSetString(k, toLua(l, item))
		}
		return t
	}
	return lua.LNil
}
