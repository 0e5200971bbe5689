package policy

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/vocab"
)

// costLimit bounds the work of one evaluation, in CEL cost units (about
// one per operation, more for strings and lists by their size): a policy
// that would run longer is stopped, and the call denied.
const costLimit = 100_000

// defaultName is the name of the policy of the tools without their own.
const defaultName = "default"

// Config configures a [Set]. It is also the policy file of vigil
// -auth-policy, read with go.yaml.in/yaml/v3 (see [Config.UnmarshalYAML]):
//
//	default: 'true'
//	tools:
//	  sleep: 'arguments.ms < 1000 || "vigil.slow" in principal.scopes'
//	  echo: 'principal.subject != "mallory"'
type Config struct {
	// Default is the expression of the tools without one of their own;
	// "" allows them, uncounted.
	Default string
	// Tools maps a tool name to its expression, a CEL expression of type
	// bool over the package's variables: true allows the call.
	Tools map[string]string
	// Registerer receives mcp_server_policy_decisions_total; nil: no
	// metric.
	Registerer prometheus.Registerer
	// Logger receives one record per decision of a call (info for a
	// denial, debug for an allow), never an argument or a claim; nil: none.
	Logger *slog.Logger

	lines map[string]int // the line of each policy in the YAML read (UnmarshalYAML)
}

// Set is a compiled set of policies, one per tool and a default. It is
// safe for concurrent use.
type Set struct {
	byTool    map[string]*compiled
	def       *compiled // nil: the tools without a policy are allowed
	decisions *prometheus.CounterVec
	logger    *slog.Logger
	listed    listCache
	schemas   schemaCache // the property names of each tool's input schema (fold.go)
}

// compiled is one policy, ready to run.
type compiled struct {
	name           string // "default" or "tools.NAME"
	prg            cel.Program
	readsArgs      bool   // its expression reads arguments: it cannot hide its tool
	readsRequest   bool   // it reads request: its tools/list decision is not cached
	readsPrincipal bool   // it reads principal: the variable is built for it
	readsTool      bool   // it reads tool: the variable is built for it
	denial         []byte // the data of the error that answers a denied call
	// allowed and denied count its decisions; nil without a Registerer.
	allowed, denied prometheus.Counter
}

// New compiles and type-checks the policies of cfg and registers the
// decision counter with cfg.Registerer, with each policy's series at zero.
// An expression that does not compile, or is not of type bool, fails New
// with its position (and its line, for a Config read from YAML).
func New(cfg Config) (*Set, error) {
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	s := &Set{byTool: make(map[string]*compiled, len(cfg.Tools)), logger: cfg.Logger}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if cfg.Default != "" {
		s.def, err = compile(env, defaultName, cfg.Default)
		errs = append(errs, cfg.located(defaultName, err))
	}
	for _, tool := range slices.Sorted(maps.Keys(cfg.Tools)) {
		name := "tools." + tool
		if !vocab.ValidToolName(tool) {
			errs = append(errs, cfg.located(name, fmt.Errorf("%q is not a valid tool name", tool)))
			continue
		}
		c, err := compile(env, name, cfg.Tools[tool])
		errs = append(errs, cfg.located(name, err))
		s.byTool[tool] = c
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Registerer != nil {
		s.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: mcpconv.MetricPolicyDecisions,
			Help: "tools/call decisions of the tool policies, by policy (default, or tools.NAME) and decision (allow, deny).",
		}, []string{"policy", "decision"})
		for _, c := range s.policies() {
			c.allowed = s.decisions.WithLabelValues(c.name, decisionAllow)
			c.denied = s.decisions.WithLabelValues(c.name, decisionDeny)
		}
		if err := cfg.Registerer.Register(s.decisions); err != nil {
			return nil, fmt.Errorf("policy: register %s: %w", mcpconv.MetricPolicyDecisions, err)
		}
	}
	return s, nil
}

// located returns err, from the policy of that name, prefixed with its
// name and, when cfg was read from YAML, its line; nil for nil.
func (cfg *Config) located(name string, err error) error {
	if err == nil {
		return nil
	}
	if line, ok := cfg.lines[name]; ok {
		return fmt.Errorf("line %d: policy %s: %w", line, name, err)
	}
	return fmt.Errorf("policy %s: %w", name, err)
}

// policies returns every policy of s, the default first.
func (s *Set) policies() []*compiled {
	var all []*compiled
	if s.def != nil {
		all = append(all, s.def)
	}
	for _, tool := range slices.Sorted(maps.Keys(s.byTool)) {
		all = append(all, s.byTool[tool])
	}
	return all
}

// policyFor returns the policy of the named tool, nil for none.
func (s *Set) policyFor(tool string) *compiled {
	if c, ok := s.byTool[tool]; ok {
		return c
	}
	return s.def
}

// newEnv returns the CEL environment of the policies: the variables,
// type-checked, and the standard functions.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[principalVars](), reflect.TypeFor[toolVars](), reflect.TypeFor[requestVars](), ext.ParseStructTags(true)),
		cel.Variable("principal", cel.ObjectType("policy.principalVars")),
		cel.Variable("tool", cel.ObjectType("policy.toolVars")),
		cel.Variable("request", cel.ObjectType("policy.requestVars")),
		cel.Variable("arguments", cel.MapType(cel.StringType, cel.DynType)),
	)
}

// compile compiles expr, the policy of that name.
func compile(env *cel.Env, name, expr string) (*compiled, error) {
	ast, iss := env.Compile(expr)
	if err := iss.Err(); err != nil {
		return nil, err
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("the expression is of type %s, not bool", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, err
	}
	c := &compiled{name: name, prg: prg}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		switch ref.Name {
		case "arguments":
			c.readsArgs = true
		case "request":
			c.readsRequest = true
		case "principal":
			c.readsPrincipal = true
		case "tool":
			c.readsTool = true
		}
	}
	c.denial = denialData(name)
	return c, nil
}

// listCache remembers, per principal and tool, the tools/list decisions
// of the policies that read neither arguments nor request; bounded, it is
// emptied when full.
type listCache struct {
	mu sync.Mutex
	m  map[listKey]listEntry
}
