package compiler

// Option configures a Compiler (see New).
type Option func(*Compiler)

// WithObserver makes every evaluation of the compiled expressions known to
// o, with the outcomes of the nodes o probes (see Observer.Probes). Branch
// observation costs a second, instrumented evaluation of each expression;
// the evaluation whose value, cost and errors count is the ordinary one, so
// results, runtime costs, budgets and the lazy evaluation of variables are
// exactly those of a Compiler without an observer. A nil o is ignored.
func WithObserver(o Observer) Option {
	return func(c *Compiler) {
		if o != nil {
			c.observer = o
		}
	}
}
