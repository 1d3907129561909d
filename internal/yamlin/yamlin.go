// Package yamlin parses a YAML input file (a device profile, a sweep file) as
// one document and refuses what yaml.v3 would otherwise take silently or
// report far from its cause: a key written twice in one mapping (decoding
// into a struct keeps the last; decoding the node tree fails the whole
// mapping), a merge key (<<), which copies fields from elsewhere, and a
// second document after ---, which decoding never reads.
package yamlin

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing refused, with its line.
type Problem struct {
	Line int    // the line it is on
	Path string // the dotted path of the mapping holding it: "" at the top, "memory", "flash.aggregate[0]"
	Msg  string // what is wrong, with its lines: `duplicate key "name" (line 2, first at 1)`
}

// String is the problem as "path: msg", or msg alone at the top level.
func (p Problem) String() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// Parse parses data as one YAML document; what names the input in messages
// ("profile file"). It returns the document node (nil when data holds no
// document), every problem found, and yaml.v3's error for a syntax error.
//
// The document comes back with the refused keys removed (of duplicates, the
// first is kept), so that decoding it goes on to find the input's other
// problems. Empty documents after the first (a trailing ---) are accepted.
func Parse(data []byte, what string) (*yaml.Node, []Problem, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	var probs []Problem
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if !isEmpty(&next) {
			probs = append(probs, Problem{Line: next.Line,
				Msg: fmt.Sprintf("a %s holds one YAML document; found another at line %d", what, next.Line)})
			break
		}
	}
	for _, n := range doc.Content {
		check(n, "", &probs)
	}
	return &doc, probs, nil
}

// isEmpty reports whether a document holds nothing (only --- or comments).
func isEmpty(doc *yaml.Node) bool {
	for _, n := range doc.Content {
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!null" || n.Value != "" {
			return false
		}
	}
	return true
}

// check walks the tree under n, whose path is path, reporting and removing
// duplicate and merge keys. Aliases are not followed: the node an alias
// names is checked where it is defined.
func check(n *yaml.Node, path string, probs *[]Problem) {
	switch n.Kind {
	case yaml.MappingNode:
		checkMapping(n, path, probs)
	case yaml.SequenceNode:
		for i, e := range n.Content {
			check(e, fmt.Sprintf("%s[%d]", path, i), probs)
		}
	}
}

// checkMapping checks one mapping's keys, then its values.
func checkMapping(n *yaml.Node, path string, probs *[]Problem) {
	first := map[string]int{} // scalar key → its first line
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			*probs = append(*probs, Problem{Line: k.Line, Path: path,
				Msg: fmt.Sprintf("merge keys (<<) are not supported: write the fields out (line %d)", k.Line)})
			continue
		}
		if k.Kind == yaml.ScalarNode {
			if line, dup := first[k.Value]; dup {
				*probs = append(*probs, Problem{Line: k.Line, Path: path,
					Msg: fmt.Sprintf("duplicate key %q (line %d, first at %d)", k.Value, k.Line, line)})
				continue
			}
			first[k.Value] = k.Line
		} else {
			check(k, path, probs) // a complex key (? {a: 1}) is a mapping too
		}
		// NB: kept shares n.Content's array; it never passes i, so the
		// pairs still to read are intact.
		kept = append(kept, k, v)
		check(v, join(path, k.Value), probs)
	}
	n.Content = kept
}

// join is the path of key inside the mapping at path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
