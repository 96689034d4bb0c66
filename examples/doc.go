// Package examples holds runnable programs that compose nodekit's packages
// into node agents. examples/kubelet is the reference assembly of all seven
// packages; shorter examples show one package each.
package examples
