// Package demotest holds the tests of scripts/demo that run it for real:
// its signal handling, against a real process group (demo_test.go). It
// has no code of its own.
package demotest
