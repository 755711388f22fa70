// Package ttl reads ttl.yml, the operator's policy for how long spatial
// memory remembers a rejected place, and resolves the time to live of each
// rejection from its cause and the verifier that made it.
//
// # File format
//
//	causes:
//	  biome: -1
//	  worldBorder: -1
//	  vert: -1
//	  safety: -1
//	  uniquePlacement: 30d
//	  safetyExternal: 14d
//	verifiers:
//	  WorldGuardChecker: -1
//	  GriefPreventionChecker: 14d
//
// Both sections are optional; an empty file is the built-in defaults
// (Default). Keys under causes are memory.Cause names. A value is -1
// (permanent), 0 (do not remember) or a positive duration (see
// ParseDuration). What each cause accepts follows its tier:
//
//   - static causes (biome, worldBorder, vert, safety, prefilterBiome,
//     prefilterRange) never expire and accept only -1;
//   - transient causes (timeout, nullChunk) are never stored and accept
//     only 0;
//   - dynamic causes (safetyExternal, uniquePlacement, ungenerated,
//     unreadable) accept any value.
//
// Keys under verifiers are verifier source names (as registered with
// package verify): non-empty, printable, without whitespace. Their values
// are those of a dynamic cause.
//
// # Resolution
//
// Policy.TTL and Policy.Resolve give the time to live of one rejection:
//
//   - safetyExternal: verifiers.<source>, then causes.safetyExternal, then 14d;
//   - uniquePlacement: causes.uniquePlacement, then 30d;
//   - ungenerated and unreadable: causes.<cause>, then 10m and 1h (the
//     engine keeps them until the chunk changes instead on a Minecraft
//     world it watches, unless causes.<cause> is set);
//   - static causes: -1 (permanent); transient and unknown causes: 0.
//
// The result uses the convention of package memory: negative means
// permanent (a static-tier run), zero means do not store, positive means
// expire after that long.
package ttl
