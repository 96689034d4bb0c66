package pluginwatch

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/klog/v2"
)

// operation is the one piece of work in flight for a socket path: the
// deregistration of the plugin registered there, the registration of the
// socket found there, or both in that order (a plugin that re-created its
// socket). Only one operation per path is in flight at a time, as
// upstream's operation executor keys its pending operations by socket
// path.
type operation struct {
	path string
	// old is the registration to undo first; nil if none.
	old *entry
	// register says to register the socket id at path.
	register bool
	id       socketID

	// err is the operation's failure, set before it is done.
	err error
}

// plan decides one pass's operations: for each path with no operation in
// flight (busy), deregister a plugin whose socket is gone, deregister and
// register again one whose socket was re-created, and register a new
// socket unless it is in back-off after a failure. The operations are in
// path order. plan is pure: the caller starts them.
func plan(found map[string]socketID, registered map[string]entry, busy map[string]bool, inBackOff func(path string) bool) []*operation {
	var ops []*operation
	for path, e := range registered {
		if busy[path] {
			continue
		}
		id, ok := found[path]
		switch {
		case !ok:
			ops = append(ops, &operation{path: path, old: &e})
		case id != e.id:
			ops = append(ops, &operation{path: path, old: &e, register: true, id: id})
		}
	}
	for path, id := range found {
		if _, ok := registered[path]; ok || busy[path] || inBackOff(path) {
			continue
		}
		ops = append(ops, &operation{path: path, register: true, id: id})
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path < ops[j].path })
	return ops
}

// start plans a pass over the directory and starts its operations, each
// in its own goroutine counted in wg, and returns them.
func (w *Watcher) start(ctx context.Context, wg *sync.WaitGroup) ([]*operation, error) {
	found, err := w.sockets()
	if err != nil {
		return nil, err
	}
	now := w.cfg.Clock.Now()
	w.mu.Lock()
	ops := plan(found, w.registered, w.busy, func(path string) bool { return w.retry.IsInBackOffSinceUpdate(path, now) })
	for _, op := range ops {
		w.busy[op.path] = true
	}
	w.mu.Unlock()
	wg.Add(len(ops))
	for _, op := range ops {
		go func() {
			defer wg.Done()
			w.execute(ctx, op)
		}()
	}
	w.retry.GC()
	return ops, nil
}

// execute runs op and records its outcome: the registration, or the
// back-off before the next attempt. The path is free for another
// operation once the outcome is recorded.
func (w *Watcher) execute(ctx context.Context, op *operation) {
	logger := klog.FromContext(ctx)
	if op.old != nil {
		logger.V(2).Info("Deregistering plugin", "type", op.old.Type, "name", op.old.Name, "socket", op.old.Socket)
		w.cfg.Handlers[op.old.Type].DeregisterPlugin(ctx, op.old.Name, op.old.Endpoint)
	}
	var e entry
	if op.register {
		e, op.err = w.register(ctx, op.path, op.id)
	}
	now := w.cfg.Clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.busy, op.path)
	if op.old != nil {
		delete(w.registered, op.path)
	}
	switch {
	case !op.register:
	case op.err != nil:
		w.retry.Next(op.path, now)
		op.err = fmt.Errorf("plugin socket %s: %w", op.path, op.err)
		logger.V(2).Info("Plugin registration failed; retried after a back-off", "socket", op.path, "err", op.err)
	default:
		w.retry.DeleteEntry(op.path)
		w.registered[op.path] = e
	}
}
