// Package internal holds helpers shared by nodekit's tests and examples; it
// is not part of the public API.
package internal
