#!/usr/bin/env bash
# pg.sh — a throw-away PostgreSQL cluster for the tests and benchmarks:
# Debian's own server binaries, a fresh data directory, a free port, the
# socket in that directory, nothing shared with a cluster the machine may run.
#
#   scripts/pg.sh start DIR [NAME] [--durable]
#                                    initdb into DIR/NAME (default "primary"),
#                                    start it, create the database "a2m", and
#                                    print the connection string on stdout
#   scripts/pg.sh standby DIR        a streaming hot standby of DIR/primary
#                                    (pg_basebackup), started; prints its string
#   scripts/pg.sh stop DIR [NAME]    stop it (fast shutdown); `stop DIR all` stops
#                                    every cluster under DIR
#   scripts/pg.sh crash DIR [NAME]   stop it as a crash would (-m immediate)
#   scripts/pg.sh restart DIR [NAME] start a stopped cluster again, same port
#   scripts/pg.sh bin                print the server's bin directory
#
# initdb refuses to run as root (CI runs the tests as root), so as root the
# cluster belongs to the system user the Debian package creates, `postgres`,
# and every server command runs as that user (runuser); DIR is made
# writable for it. As anyone else it belongs to the caller.
#
# A test cluster runs with fsync off: the tests kill PostgreSQL's processes
# (pg_ctl stop -m immediate), never the machine, and a write PostgreSQL has
# handed to the kernel survives that; what a2m must get right there (answer
# only after COMMIT returned, synchronous_commit on) is unchanged, and the
# suite runs several times faster on a shared disk. --durable keeps fsync
# on, for the benchmarks (docs/BENCHMARKS.md). Connections use
# the socket in the cluster's directory with trust authentication: nothing
# listens on a network address. The connection string names that socket,
# the port and the database; DIR/NAME/conninfo holds it too.
set -euo pipefail

bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$d" ] || [ ! -x "$d/initdb" ]; then
		echo "pg.sh: no PostgreSQL server found (apt-get install postgresql)" >&2
		exit 1
	fi
	echo "$d"
}

# as_owner CMD...: runs CMD as the cluster's owner.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

owner_name() {
	if [ "$(id -u)" -eq 0 ]; then echo postgres; else id -un; fi
}

# A port nobody listens on now (the kernel picks it).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_server DATA PORT: starts the cluster in DATA on PORT, socket in DATA.
start_server() {
	local data=$1 port=$2 bin
	bin=$(bindir)
	as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
		-o "-p $port -k $data -c listen_addresses=''" start >/dev/null
}

conninfo() {
	local data=$1 port=$2
	echo "host=$data port=$port dbname=a2m user=$(owner_name)"
}

cmd=${1:-}
case "$cmd" in
bin)
	bindir
	;;
start)
	dir=${2:?usage: pg.sh start DIR [NAME] [--durable]}
	name=${3:-primary}
	fsync=off
	[ "${4:-}" = --durable ] && fsync=on
	[ "$name" = --durable ] && { name=primary; fsync=on; }
	bin=$(bindir)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	data="$dir/$name"
	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 || { echo "pg.sh: no 'postgres' user (install postgresql)" >&2; exit 1; }
		chown postgres "$dir"
		chmod 755 "$dir"
	fi
	as_owner "$bin/initdb" -D "$data" -A trust -E UTF8 --locale=C.UTF-8 >"$dir/$name.initdb.log" 2>&1 ||
		{ cat "$dir/$name.initdb.log" >&2; exit 1; }
	# A primary a standby can follow (--durable: every commit on disk).
	cat >>"$data/postgresql.conf" <<-EOF
		wal_level = replica
		max_wal_senders = 4
		hot_standby = on
		max_connections = 200
		shared_buffers = 128MB
		fsync = $fsync
		full_page_writes = $fsync
		unix_socket_permissions = 0777
	EOF
	echo "local replication all trust" >>"$data/pg_hba.conf"
	port=$(free_port)
	echo "$port" >"$data/a2m_port"
	start_server "$data" "$port"
	as_owner "$bin/createdb" -h "$data" -p "$port" a2m
	conninfo "$data" "$port" | tee "$data/conninfo"
	;;
standby)
	dir=${2:?usage: pg.sh standby DIR}
	dir=$(cd "$dir" && pwd)
	bin=$(bindir)
	primary="$dir/primary"
	pport=$(cat "$primary/a2m_port")
	data="$dir/standby"
	as_owner "$bin/pg_basebackup" -h "$primary" -p "$pport" -D "$data" -R -X stream >/dev/null
	port=$(free_port)
	echo "$port" >"$data/a2m_port"
	start_server "$data" "$port"
	conninfo "$data" "$port" | tee "$data/conninfo"
	;;
stop | crash)
	dir=${2:?usage: pg.sh stop DIR [NAME]}
	name=${3:-primary}
	bin=$(bindir)
	mode=fast
	[ "$cmd" = crash ] && mode=immediate
	if [ "$name" = all ]; then
		for d in "$dir"/*/; do
			[ -f "$d/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$d" -m "$mode" -w stop >/dev/null 2>&1 || true
		done
	else
		as_owner "$bin/pg_ctl" -D "$dir/$name" -m "$mode" -w stop >/dev/null
	fi
	;;
restart)
	dir=${2:?usage: pg.sh restart DIR [NAME]}
	name=${3:-primary}
	dir=$(cd "$dir" && pwd)
	data="$dir/$name"
	start_server "$data" "$(cat "$data/a2m_port")"
	;;
*)
	echo "usage: pg.sh start|standby|stop|crash|restart DIR [NAME] | pg.sh bin" >&2
	exit 2
	;;
esac
