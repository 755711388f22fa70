// Package archive is a persistent, bounded, disposable cache of generated
// terrain tiles. Wrap puts an Archive in front of any terrain.Source; the
// records live in a Store (SQLite by default, PostgreSQL for fleets, memory
// for tests), whose contract is defined here and checked against every
// implementation by package archivetest.
package archive
