// Package api holds the JSON shapes of the HTTP API v1 described by
// openapi.yaml, shared by package server and package client.
//
// Durations are float milliseconds (keys ending in "Ms"), times RFC 3339
// in UTC. A pointer field of a request body tells an absent key (or null)
// from a zero value: nil is absent.
//
// The types are plain values: their zero values are usable, and like any
// value they are safe for concurrent use as long as no goroutine writes
// one that others read. The package imports only the standard library.
package api
