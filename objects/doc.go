// Package objects is a node agent's configMap and secret manager:
// a watch per object that a pod bound to the node references, shared by
// the volume manager and the container environment, read as the node
// identity. Register a pod on every sync and Unregister it when it has
// terminated; ConfigMap and Secret then answer from memory.
package objects
