#!/bin/sh
# alternate.sh measures `rtp serve` against `rtp bench null-server` with the
# same generator, alternately: serve, null, serve, null. Run it from a
# directory holding a pregenerated data directory for the config:
#
#   rtp pregen --config config/loadtest.example.yml --target 25000
#   sh benchmarks/profiles/alternate.sh ./rtp config/loadtest.example.yml
#
# Arguments: the rtp binary, the configuration; env RATE (default 1000),
# DURATION (default 25s), ROUNDS (default 2), SNAPSHOT (a copy of the
# pregenerated data directory: each serve run then starts from a fresh
# copy of it in ./alternate-data; without one every round after the first
# starts from the stock the earlier rounds drew down, and at 1,000/s two
# 25 s rounds use up a 25,000-place cold stock). It prints the JSON summary of
# every run, one a line, prefixed with the server's name; its stealMs is
# the processor time the hypervisor took from the machine meanwhile (a
# run where that is more than a percent of its length is measuring the
# host, not the server). Each serve run starts once the server's hot
# sinks are full (rtp stats --until-full).
set -eu
RTP=${1:?rtp binary}
CONFIG=${2:?configuration file}
RATE=${RATE:-1000}
DURATION=${DURATION:-25s}
ROUNDS=${ROUNDS:-2}
SNAPSHOT=${SNAPSHOT:-}

# wait_listening waits for a server's "listening on http://ADDR" line in
# its log and prints ADDR (both servers listen on port 0: any free port).
# It waits for the address itself, not the words: a line read while the
# server is still writing it holds no address yet.
wait_listening() { # log file
	i=0
	until addr=$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$1" 2>/dev/null | head -n 1) && [ -n "$addr" ]; do
		i=$((i + 1))
		if [ "$i" -gt 600 ]; then
			echo "alternate: server did not start; see $1" >&2
			return 1
		fi
		sleep 0.2
	done
	echo "$addr"
}

run() { # name addr
	out=$("$RTP" bench http --addr "$2" --rate "$RATE" --duration "$DURATION" --complete --json | tr -d '\n')
	echo "$1 $out"
}

r=0
while [ "$r" -lt "$ROUNDS" ]; do
	r=$((r + 1))
	data=
	if [ -n "$SNAPSHOT" ]; then
		rm -rf alternate-data
		cp -R "$SNAPSHOT" alternate-data
		data="--data alternate-data"
	fi
	# shellcheck disable=SC2086 # $data is empty or two words
	"$RTP" serve --config "$CONFIG" $data --listen 127.0.0.1:0 --log-level warn >serve.log 2>&1 &
	pid=$!
	addr=$(wait_listening serve.log)
	# Measure the steady state: the refill fills the hot sinks at start
	# (some 8,700 promotions for the load-test config) before it only
	# keeps pace with demand.
	"$RTP" stats --addr "$addr" --until-full --timeout 120s >/dev/null
	sleep 1
	run serve "$addr"
	kill -INT "$pid"
	wait "$pid" || true

	"$RTP" bench null-server --listen 127.0.0.1:0 >null.log 2>&1 &
	pid=$!
	addr=$(wait_listening null.log)
	run null "$addr"
	kill -INT "$pid"
	wait "$pid" || true
done
