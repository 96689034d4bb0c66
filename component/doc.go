// Package component runs a program's parts as one graph: each part declared
// once, in dependency order, with how it starts, how it runs, whether the
// parts after it wait for it, and how it stops.
//
// # Model
//
// A Group holds Parts in the order the program declares them, each one
// depending only on parts before it. Group.Run is the whole life of the
// program:
//
//  1. Parts start one at a time, in order (Part.Start: build, dial, bind,
//     read; all I/O happens here, none in New). A part that gates the rest
//     (Part.Ready) has its Run launched at once, and the next part starts
//     only once it is ready: the node's client certificate before the
//     node is registered, for instance.
//  2. Once every part started, the Runs of the other parts are launched in
//     declared order and Group.Ready is closed.
//  3. When the caller's context is done or a part's Run fails, the parts
//     stop in reverse order: a part's context is cancelled, its Run
//     awaited, then its Stop called, before the part declared before it.
//     A part that fails to start stops those already started, the same
//     way. Run returns the first failure, named by its part.
//
// Each part's Start and Run get the caller's context with a logger named
// after the part (klog.FromContext). A part's Run context is its own: it
// is cancelled when the part's turn to stop comes, not before, so a part
// never sees the parts it depends on stop under it.
//
// # Host duties
//
// Declare parts in dependency order, give each a unique name, and make
// every Run return once its context is done. Stop should not block for
// long: it runs on the shutdown path.
//
// # Differences from upstream
//
// The kubelet starts its parts from one long function and stops none of
// them in order (it exits). controller-runtime's Manager starts
// Runnables in fixed groups (caches, webhooks, others, leader election)
// and stops them in reverse group order; here the program names the order
// of every part itself.
package component
