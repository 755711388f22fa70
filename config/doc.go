// Package config reads rtp.yml, the configuration of an rtp service: the
// HTTP server, the data folder, the database and terrain archive, the
// store of network leases and the node's name in a fleet, the ttl.yml to
// use, the admin token, the worlds, the regions (shape, distribution,
// safety rules, hot cache sizes, pulse and budget, unique placement) and
// the verifiers.
//
// Every option has a default. Default returns the configuration of rtp
// run without a file: one procedural world "world", one region "default"
// on it (a circle of radius 4096 blocks around block 0, 0), the database
// and archive under ./rtp-data, and the server on 127.0.0.1:8080. The
// example file rtp.example.yml, beside this package, documents every
// option with its default; a test checks that it loads to exactly
// Default and that it names every key.
//
// # Loading
//
// Load and LoadFile read a file over the defaults: a section left out
// keeps its defaults, a section given merges over them field by field.
// The worlds and regions maps, when given, replace the default entries;
// each entry starts from DefaultWorld or DefaultRegion. Lists replace
// lists; each verifier starts from DefaultVerifier. The YAML key of each
// field is in its struct tag.
//
// Loading reports every problem at once, each a *LineError formatted
// "file:line: key.path: message": YAML syntax, unknown keys (with a
// suggestion for a misspelt one), duplicate keys, values of the wrong
// kind, keys the chosen kind does not use, and all that Validate finds.
// CheckFile (and Config.Check) go further and open what the file names,
// as a starting server would: ttl.yml, the token and secret files, and
// every region's shape. A problem that follows from another (a region
// naming a world whose entry did not parse) is not reported twice.
//
// # Units and paths
//
// Durations are Go durations ("500ms", "2s", "1m"); ttl.yml keeps its own
// duration syntax (package ttl). Shapes are written in blocks, decode
// into a geom.ShapeSpec (the one shape type every package shares) and
// build in chunks (see Region.BuildShape). Relative paths of the files rtp
// keeps (database, archive, ttl.yml) are relative to DataDir; every other
// relative path (DataDir itself, a world's save folder, the token and
// secret files) is relative to the working directory. A Minecraft world's
// path must be a directory and no path may hold a NUL byte; its
// region_dir must stay inside the save folder (the anvil reader opens
// every file through an os.Root there, so neither ".." nor a symbolic
// link leads out).
//
// # Fleets
//
// By default rtp keeps everything in one process: the locations database
// and the terrain archive in SQLite files under DataDir, network leases in
// memory. Several rtp serve processes (nodes) share their state when the
// file says so:
//
//	database: {kind: postgres, url: "postgres://..."}  # sqlite (default) | postgres
//	archive:  {kind: postgres, url: "postgres://..."}  # sqlite (default) | postgres | disabled
//	leases:   {kind: redis, url: "redis://..."}        # local (default) | redis
//	node:     {name: rtp-1, lease: 15s}
//
// A kind that takes a URL needs one: the file's url, or else the
// environment variable RTP_DATABASE_URL, RTP_ARCHIVE_URL or
// RTP_LEASES_URL. The file wins; the variables are read only for a kind
// that takes a URL, so one left set is ignored by a file of kind sqlite
// or local, while a url written in the file for such a kind is an error.
// PostgreSQL URLs are postgres:// or postgresql:// and must parse with
// pgx (pgconn.ParseConfig, which also reads the TLS files the URL names);
// Redis URLs are redis:// or rediss:// and must parse with go-redis
// (redis.ParseURL). archive.disabled: true, from before archive.kind,
// still means kind disabled. node.name defaults to "" (the engine names
// the node after its host, with a random suffix); node.lease is how long a
// node's claims outlive its last heartbeat. Config.Spec carries all of it
// into engine.Spec.Fleet and engine.ArchiveSpec.URL.
//
// # Secrets
//
// The admin token is a Secret: fmt, slog, JSON and YAML print it as
// "[redacted]", and no error message quotes it. Prefer auth.token_file to
// writing the token in the file. The service URLs are ServiceURL values,
// printed with their password replaced by "xxxxx" (RedactURL); no error
// message quotes them. Prefer the environment variables to writing a
// password in the file.
//
// # Values
//
// Every type of the package is a plain value with exported fields, safe
// to copy and, once nobody changes it, to read from any number of
// goroutines. The zero value of Config, World, Region, Distribution and
// Verifier (and of a region's geom.ShapeSpec) is not a valid
// configuration (Default and the Default* functions give valid ones); the
// zero value of a section struct is valid only where its fields say 0 is.
//
// # Using a Config
//
// The engine knows nothing of YAML: Config.Spec translates a Config into
// an engine.Spec, the plain Go description engine.New and
// engine.Engine.Reload take (Region.Spec translates one region). The HTTP
// server knows nothing of the file either: its parts come from Server and
// Auth.Resolve, which rtp serve maps onto the server's own plain options
// (server.Options, server.Timeouts, server.AdminToken).
package config
