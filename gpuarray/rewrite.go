package gpuarray

import (
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// rewriteGraph rebuilds root's graph with the nodes that replace rewrites replaced: it walks
// the graph from root once, each node once however many nodes read it, and asks replace for
// each node it reaches. A non-nil node from replace takes n's place (its shape and chunks
// are n's, so the nodes above keep theirs) and the walk does not go below n; nil leaves n and
// walks its arguments. The first error stops the walk. Where nothing is replaced root itself
// comes back; otherwise the nodes above a replacement are copies, the given graph unchanged.
// GPU computes rewrite with it the device work they do first (resolveBincounts,
// resolveTakes).
func rewriteGraph(root *expr.Node, replace func(n *expr.Node) (*expr.Node, error)) (*expr.Node, error) {
	repl := map[*expr.Node]*expr.Node{}
	seen := map[*expr.Node]bool{}
	var find func(n *expr.Node) error
	find = func(n *expr.Node) error {
		if seen[n] {
			return nil
		}
		seen[n] = true
		r, err := replace(n)
		if err != nil {
			return err
		}
		if r != nil {
			repl[n] = r
			return nil
		}
		for _, a := range n.Args {
			if err := find(a); err != nil {
				return err
			}
		}
		return nil
	}
	if err := find(root); err != nil {
		return nil, err
	}
	if len(repl) == 0 {
		return root, nil
	}
	return replaceNodes(root, repl), nil
}

// replaceNodes returns root's graph with the nodes of repl replaced (the replacements have
// their shapes and chunks, so the nodes above keep theirs).
func replaceNodes(root *expr.Node, repl map[*expr.Node]*expr.Node) *expr.Node {
	memo := map[*expr.Node]*expr.Node{}
	var rebuild func(n *expr.Node) *expr.Node
	rebuild = func(n *expr.Node) *expr.Node {
		if r, ok := repl[n]; ok {
			return r
		}
		if r, ok := memo[n]; ok {
			return r
		}
		r := n
		for i, a := range n.Args {
			if b := rebuild(a); b != a {
				if r == n {
					c := *n
					c.Args = slices.Clone(n.Args)
					r = &c
				}
				r.Args[i] = b
			}
		}
		memo[n] = r
		return r
	}
	return rebuild(root)
}
