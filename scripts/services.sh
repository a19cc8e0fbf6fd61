#!/usr/bin/env bash
# Real backing services for Steward, started natively on loopback (no Docker).
#
#   scripts/services.sh up [SERVICE...]      start (idempotent; a no-op for what already answers)
#   scripts/services.sh down [SERVICE...]    stop what this script started (by pidfile)
#   scripts/services.sh restart [SERVICE...]
#   scripts/services.sh status               one line per service; exit 0 when all answer, 3 otherwise
#   scripts/services.sh env                  `export NAME=value` lines for the client URLs
#   scripts/services.sh logs SERVICE         tail the service's log
#   scripts/services.sh clean                down, then delete .services/ (data, logs, unpacked servers)
#
# SERVICE is kafka, registry, clickhouse or redis (default: all four), or the opt-in redis-cluster: a Redis
# Cluster of three masters (`redis-server --cluster-enabled yes` x3, joined by `redis-cli --cluster create`),
# no replicas, no persistence. `up redis-cluster`, `down redis-cluster`, `status redis-cluster`, and
# `env redis-cluster` prints `export REDIS_CLUSTER_NODES=...` (plain `env` never does: it would switch every
# process that evals it to the cluster).
#
# Ports (environment, with defaults):
#   STEWARD_KAFKA_PORT=19092  STEWARD_KAFKA_CONTROLLER_PORT=19093
#   STEWARD_REGISTRY_PORT=18081
#   STEWARD_CLICKHOUSE_HTTP_PORT=18123  STEWARD_CLICKHOUSE_TCP_PORT=19000
#   STEWARD_REDIS_PORT=16379
#   STEWARD_REDIS_CLUSTER_PORT=17001 (the cluster's masters: this port and the next two)
#   STEWARD_REDIS_PERSIST=1  Redis with an append-only file (trust debt and job state survive a restart;
#                            `npm run demo` sets it); default 0 for tests: state that nothing needs to keep
# Other knobs:
#   STEWARD_SERVICES_DIR   data, logs and pids (default: <repo>/.services)
#   STEWARD_SERVICES_TIMEOUT  seconds to wait for each service to answer (default 150)
#   STEWARD_KAFKA_VERSION (3.9.1), STEWARD_KAFKA_HEAP (512m)
#   STEWARD_APICURIO_VERSION (3.0.9, falls back to 2.6.13.Final), STEWARD_REGISTRY_HEAP (384m)
#   STEWARD_M2_REPO        Maven local repository (default ~/.m2/repository)
#   JAVA_HOME              Java 17+ (else `java` on PATH)
#
# Kafka 3.9.x (KRaft, one node) comes from Maven Central through scripts/kafka/pom.xml.
# Apicurio Registry comes from Maven Central as apicurio-registry-app:VERSION:tar.gz:all, runs with
# in-memory (H2) storage and serves the Confluent API at /apis/ccompat/v7.
# 3.1.x/3.2.x of apicurio-registry-app are not published on Maven Central and 3.3+ needs Java 21,
# so 3.0.9 is the default. ClickHouse and Redis are the Debian packages (`clickhouse-server`,
# `redis-server`). Redis runs without persistence unless STEWARD_REDIS_PERSIST=1 (AOF); the registry is
# in memory; Kafka and ClickHouse keep their data under .services/ until `clean`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"

SERVICES_DIR="${STEWARD_SERVICES_DIR:-$ROOT/.services}"
KAFKA_PORT="${STEWARD_KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${STEWARD_KAFKA_CONTROLLER_PORT:-19093}"
REGISTRY_PORT="${STEWARD_REGISTRY_PORT:-18081}"
CLICKHOUSE_HTTP_PORT="${STEWARD_CLICKHOUSE_HTTP_PORT:-18123}"
CLICKHOUSE_TCP_PORT="${STEWARD_CLICKHOUSE_TCP_PORT:-19000}"
REDIS_PORT="${STEWARD_REDIS_PORT:-16379}"
REDIS_CLUSTER_PORT="${STEWARD_REDIS_CLUSTER_PORT:-17001}"
REDIS_CLUSTER_PORTS=("$REDIS_CLUSTER_PORT" "$((REDIS_CLUSTER_PORT + 1))" "$((REDIS_CLUSTER_PORT + 2))")
TIMEOUT="${STEWARD_SERVICES_TIMEOUT:-150}"
KAFKA_VERSION="${STEWARD_KAFKA_VERSION:-3.9.1}"
KAFKA_HEAP="${STEWARD_KAFKA_HEAP:-512m}"
APICURIO_VERSION="${STEWARD_APICURIO_VERSION:-3.0.9}"
APICURIO_FALLBACK_VERSION="2.6.13.Final"
REGISTRY_HEAP="${STEWARD_REGISTRY_HEAP:-384m}"
M2_REPO="${STEWARD_M2_REPO:-$HOME/.m2/repository}"
HOST=127.0.0.1
ALL_SERVICES=(kafka registry clickhouse redis)

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA="$JAVA_HOME/bin/java"; else JAVA=java; fi
MVN=(mvn -B -q -Dstyle.color=never "-Dmaven.repo.local=$M2_REPO")

log() { printf '[services] %s\n' "$*" >&2; }
die() { printf '[services] error: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

# ---------------------------------------------------------------- URLs

url_of() {
  case "$1" in
    kafka) echo "$HOST:$KAFKA_PORT" ;;
    registry) echo "http://$HOST:$REGISTRY_PORT/apis/ccompat/v7" ;;
    clickhouse) echo "http://$HOST:$CLICKHOUSE_HTTP_PORT" ;;
    redis) echo "redis://$HOST:$REDIS_PORT" ;;
    redis-cluster) cluster_nodes ;;
  esac
}

cluster_nodes() {
  local p out=()
  for p in "${REDIS_CLUSTER_PORTS[@]}"; do out+=("$HOST:$p"); done
  (IFS=,; echo "${out[*]}")
}

print_env() {
  echo "export KAFKA_BROKERS=$(url_of kafka)"
  echo "export SCHEMA_REGISTRY_URL=$(url_of registry)"
  echo "export REDIS_URL=$(url_of redis)"
  echo "export CLICKHOUSE_URL=$(url_of clickhouse)"
}

# ---------------------------------------------------------------- probes (fast, no JVM)

# Kafka: send an ApiVersions v0 request and expect correlation id 1 and error code 0.
probe_kafka() {
  local out
  out="$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    # size=15 | api_key=18 api_version=0 correlation_id=1 client_id="probe"
    printf "\x00\x00\x00\x0f\x00\x12\x00\x00\x00\x00\x00\x01\x00\x05probe" >&3
    head -c 10 <&3 | od -An -tx1 | tr -d " \n"
  ' "$HOST" "$KAFKA_PORT" 2>/dev/null)" || return 1
  # bytes 4..9: correlation id 00000001, error code 0000
  [[ "${out:8:12}" == "000000010000" ]]
}

probe_registry() {
  curl -sf -m 3 -o /dev/null "http://$HOST:$REGISTRY_PORT/apis/ccompat/v7/subjects"
}

probe_clickhouse() {
  [[ "$(curl -sf -m 3 "http://$HOST:$CLICKHOUSE_HTTP_PORT/?query=SELECT%201" 2>/dev/null)" == "1" ]]
}

probe_redis() {
  local out
  out="$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "PING\r\n" >&3
    IFS= read -r line <&3; printf "%s" "$line"
  ' "$HOST" "$REDIS_PORT" 2>/dev/null)" || return 1
  [[ "$out" == "+PONG"* ]]
}

# The cluster answers when every master is up and the cluster has all its slots (state ok).
probe_redis_cluster() {
  local p
  for p in "${REDIS_CLUSTER_PORTS[@]}"; do
    timeout 3 redis-cli -h "$HOST" -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
  done
}

probe() { "probe_${1//-/_}"; }

port_of() {
  case "$1" in
    kafka) echo "$KAFKA_PORT" ;;
    registry) echo "$REGISTRY_PORT" ;;
    clickhouse) echo "$CLICKHOUSE_HTTP_PORT" ;;
    redis) echo "$REDIS_PORT" ;;
    redis-cluster) echo "${REDIS_CLUSTER_PORTS[0]}" ;;
  esac
}

port_in_use() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$HOST" "$1" 2>/dev/null
}

# ---------------------------------------------------------------- pid bookkeeping

pidfile() {
  case "$1" in
    redis-cluster-*) echo "$SERVICES_DIR/redis-cluster/${1#redis-cluster-}/node.pid" ;;
    *) echo "$SERVICES_DIR/$1/$1.pid" ;;
  esac
}

# A marker that the command line of our process contains, so a recycled pid is never taken for ours.
marker_of() {
  case "$1" in
    redis) echo ":$REDIS_PORT" ;;   # redis-server rewrites its title to "redis-server 127.0.0.1:PORT"
    redis-cluster-*) echo ":${1#redis-cluster-} [cluster]" ;;
    *) echo "$SERVICES_DIR/$1" ;;
  esac
}

# Prints the pid when the service's pidfile names a live process of ours.
owned_pid() {
  local f pid
  f="$(pidfile "$1")"
  [[ -f "$f" ]] || return 1
  pid="$(tr -dc '0-9' <"$f")"
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$(marker_of "$1")" || return 1
  echo "$pid"
}

# launch NAME LOGFILE CMD...: start CMD in its own session, detached, and record its pid.
launch() {
  local name="$1" logfile="$2"; shift 2
  local pf; pf="$(pidfile "$name")"
  rm -f "$pf"
  # fd 9 is the services lock: the server must not inherit it.
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pf" "$@" </dev/null >>"$logfile" 2>&1 9>&- &
  local i
  for i in $(seq 1 50); do [[ -s "$pf" ]] && return 0; sleep 0.1; done
  die "$name: no pid recorded"
}

# Sends TERM to each named service this script started, then waits for all of them to exit
# (KILL after 30s). Services answering on their port without our pidfile are left alone.
stop_services() {
  local name pid i pids=() names=()
  for name in "$@"; do
    if ! pid="$(owned_pid "$name")"; then
      rm -f "$(pidfile "$name")"
      if probe "$name"; then log "$name: answers on port $(port_of "$name") but was not started by this script; left alone"; fi
      continue
    fi
    log "$name: stopping (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid"); names+=("$name")
  done
  for i in "${!pids[@]}"; do
    pid="${pids[$i]}"; name="${names[$i]}"
    local n
    for n in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name: still running after 30s, sending KILL"
      kill -KILL "$pid" 2>/dev/null || true
      for n in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$(pidfile "$name")"
  done
}

# ---------------------------------------------------------------- artifacts (Maven Central)

kafka_classpath() {
  local dir="$SERVICES_DIR/kafka" cpfile
  mkdir -p "$dir/logs"
  cpfile="$dir/classpath-$KAFKA_VERSION.txt"
  if [[ -s "$cpfile" ]]; then
    local ok=1 jar
    IFS=':' read -r -a jars <"$cpfile"
    for jar in "${jars[@]}"; do [[ -f "$jar" ]] || { ok=0; break; }; done
    if [[ $ok == 1 ]]; then cat "$cpfile"; return 0; fi
  fi
  command -v mvn >/dev/null || die "kafka: Maven (mvn) is required to fetch Kafka $KAFKA_VERSION"
  log "kafka: resolving Kafka $KAFKA_VERSION from Maven Central"
  "${MVN[@]}" -f "$SCRIPT_DIR/kafka/pom.xml" "-Dkafka.version=$KAFKA_VERSION" \
    dependency:build-classpath "-Dmdep.outputFile=$cpfile.tmp" >"$dir/logs/mvn.log" 2>&1 \
    || { tail -n 30 "$dir/logs/mvn.log" >&2; die "kafka: could not resolve the Kafka classpath (Maven output above)"; }
  mv "$cpfile.tmp" "$cpfile"
  cat "$cpfile"
}

# Prints the path of the registry's runner jar, fetching and unpacking it once.
registry_jar() {
  local dir="$SERVICES_DIR/registry" v jar
  mkdir -p "$dir/logs"
  for v in "$APICURIO_VERSION" "$APICURIO_FALLBACK_VERSION"; do
    jar="$(ls "$dir/dist-$v"/*-runner.jar 2>/dev/null | head -n1 || true)"
    if [[ -n "$jar" ]]; then echo "$jar"; return 0; fi
  done
  command -v mvn >/dev/null || die "registry: Maven (mvn) is required to fetch Apicurio Registry"
  for v in "$APICURIO_VERSION" "$APICURIO_FALLBACK_VERSION"; do
    local tgz="$M2_REPO/io/apicurio/apicurio-registry-app/$v/apicurio-registry-app-$v-all.tar.gz"
    if [[ ! -f "$tgz" ]]; then
      log "registry: fetching io.apicurio:apicurio-registry-app:$v:tar.gz:all from Maven Central"
      if ! "${MVN[@]}" dependency:get "-Dartifact=io.apicurio:apicurio-registry-app:$v:tar.gz:all" \
          -Dtransitive=false >"$dir/logs/mvn.log" 2>&1; then
        tail -n 30 "$dir/logs/mvn.log" >&2
        log "registry: apicurio-registry-app $v could not be fetched"
        continue
      fi
    fi
    [[ -f "$tgz" ]] || { log "registry: $tgz missing after fetch"; continue; }
    rm -rf "$dir/dist-$v.tmp" && mkdir -p "$dir/dist-$v.tmp"
    tar -xzf "$tgz" -C "$dir/dist-$v.tmp"
    # Some versions wrap everything in one top-level folder.
    jar="$(find "$dir/dist-$v.tmp" -maxdepth 2 -name '*-runner.jar' | head -n1)"
    [[ -n "$jar" ]] || { log "registry: no *-runner.jar inside $tgz"; rm -rf "$dir/dist-$v.tmp"; continue; }
    local top; top="$(dirname "$jar")"
    rm -rf "$dir/dist-$v"
    mv "$top" "$dir/dist-$v"
    rm -rf "$dir/dist-$v.tmp"
    ls "$dir/dist-$v"/*-runner.jar | head -n1
    return 0
  done
  die "registry: no Apicurio Registry could be fetched"
}

# ---------------------------------------------------------------- starters

start_kafka() {
  local dir="$SERVICES_DIR/kafka" cp
  mkdir -p "$dir/data" "$dir/logs"
  cp="$(kafka_classpath)"
  cat >"$dir/server.properties" <<EOF
# Generated by scripts/services.sh: single-node KRaft broker+controller on loopback.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.network.threads=2
num.io.threads=4
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
delete.topic.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
log.retention.hours=24
log.segment.bytes=67108864
log.cleaner.dedupe.buffer.size=8388608
EOF
  cat >"$dir/log4j.properties" <<EOF
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$dir/logs/server.log
log4j.appender.file.MaxFileSize=20MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
EOF
  local jvm=("$JAVA" "-Xms128m" "-Xmx$KAFKA_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true
    "-Dlog4j.configuration=file:$dir/log4j.properties" "-Dkafka.logs.dir=$dir/logs" -cp "$cp")
  if [[ ! -f "$dir/data/meta.properties" ]]; then
    local cluster_id
    # A random Kafka Uuid (base64url of 16 bytes); one starting with '-' would read as an option.
    cluster_id=-
    while [[ "$cluster_id" == -* ]]; do
      cluster_id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    done
    log "kafka: formatting storage (cluster $cluster_id)"
    "${jvm[@]}" kafka.tools.StorageTool format --ignore-formatted -t "$cluster_id" \
      -c "$dir/server.properties" >>"$dir/logs/format.log" 2>&1 \
      || { tail -n 20 "$dir/logs/format.log" >&2; die "kafka: storage format failed"; }
  fi
  log "kafka: starting Kafka $KAFKA_VERSION on $HOST:$KAFKA_PORT (controller $KAFKA_CONTROLLER_PORT)"
  launch kafka "$dir/logs/stdout.log" "${jvm[@]}" kafka.Kafka "$dir/server.properties"
}

start_registry() {
  local dir="$SERVICES_DIR/registry" jar
  mkdir -p "$dir/logs"
  jar="$(registry_jar)"
  log "registry: starting $(basename "$jar") on $HOST:$REGISTRY_PORT"
  launch registry "$dir/logs/registry.log" "$JAVA" "-Xms64m" "-Xmx$REGISTRY_HEAP" -XX:+UseSerialGC \
    -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
    "-Dsteward.services=$dir" \
    "-Dquarkus.http.host=$HOST" "-Dquarkus.http.port=$REGISTRY_PORT" \
    -Dapicurio.storage.kind=sql -Dapicurio.storage.sql.kind=h2 \
    "-Dapicurio.datasource.url=jdbc:h2:mem:registry_db" \
    -Dapicurio.rest.deletion.group.enabled=true \
    -Dapicurio.rest.deletion.artifact.enabled=true \
    -Dapicurio.rest.deletion.artifact-version.enabled=true \
    -Dregistry.rest.artifact.deletion.enabled=true \
    -Dquarkus.log.level=INFO \
    -jar "$jar"
}

start_clickhouse() {
  local dir="$SERVICES_DIR/clickhouse"
  command -v clickhouse-server >/dev/null || die "clickhouse: clickhouse-server not found (apt-get install clickhouse-server)"
  mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas" "$dir/logs"
  cat >"$dir/config.xml" <<EOF
<?xml version="1.0"?>
<!-- Generated by scripts/services.sh -->
<yandex>
    <logger>
        <level>warning</level>
        <log>$dir/logs/clickhouse-server.log</log>
        <errorlog>$dir/logs/clickhouse-server.err.log</errorlog>
        <size>50M</size>
        <count>2</count>
    </logger>
    <http_port>$CLICKHOUSE_HTTP_PORT</http_port>
    <tcp_port>$CLICKHOUSE_TCP_PORT</tcp_port>
    <listen_host>$HOST</listen_host>
    <max_connections>1024</max_connections>
    <keep_alive_timeout>10</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mark_cache_size>268435456</mark_cache_size>
    <path>$dir/data/</path>
    <tmp_path>$dir/tmp/</tmp_path>
    <user_files_path>$dir/user_files/</user_files_path>
    <format_schema_path>$dir/format_schemas/</format_schema_path>
    <users_config>$dir/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
</yandex>
EOF
  cat >"$dir/users.xml" <<EOF
<?xml version="1.0"?>
<!-- Generated by scripts/services.sh: user "default", no password, loopback only; "steward_it" (tests of
     credentials: a password with URL-reserved characters, one database only). -->
<yandex>
    <profiles>
        <default>
            <max_memory_usage>2000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <load_balancing>random</load_balancing>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
        <steward_it>
            <password>it-secret@1:/</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
            <allow_databases><database>steward_it_cred</database></allow_databases>
        </steward_it>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
EOF
  log "clickhouse: starting $(clickhouse_version) on $HOST:$CLICKHOUSE_HTTP_PORT (native $CLICKHOUSE_TCP_PORT)"
  launch clickhouse "$dir/logs/stdout.log" clickhouse-server "--config-file=$dir/config.xml"
}

clickhouse_version() {
  dpkg-query -W -f='clickhouse-server ${Version}' clickhouse-server 2>/dev/null || echo clickhouse-server
}

start_redis() {
  local dir="$SERVICES_DIR/redis"
  command -v redis-server >/dev/null || die "redis: redis-server not found (apt-get install redis-server)"
  mkdir -p "$dir"
  # Trust debt, rate windows and gate job state are state a deployment must keep: with STEWARD_REDIS_PERSIST=1
  # every write goes to an append-only file (fsync each second), as docker-compose.yml runs it. Tests keep
  # the default, no persistence: nothing of theirs must survive a restart, and fsyncs would slow them down.
  local persist=(--appendonly no) what="no persistence"
  if [[ "${STEWARD_REDIS_PERSIST:-0}" == "1" ]]; then persist=(--appendonly yes --appendfsync everysec); what="append-only file in $dir"; fi
  log "redis: starting $(redis-server --version | awk '{print $3}' | sed 's/^v=//') on $HOST:$REDIS_PORT ($what)"
  launch redis "$dir/redis.log" redis-server --bind "$HOST" --port "$REDIS_PORT" \
    --daemonize no --save '' "${persist[@]}" --dir "$dir" --protected-mode yes \
    --maxclients 2000 --loglevel warning
}

# Three masters, each in its own directory (nodes.conf is the node's cluster identity), then one
# `redis-cli --cluster create` that splits the 16384 slots among them (only while no slot is assigned).
start_redis_cluster() {
  local dir="$SERVICES_DIR/redis-cluster" p
  command -v redis-server >/dev/null || die "redis-cluster: redis-server not found (apt-get install redis-server)"
  command -v redis-cli >/dev/null || die "redis-cluster: redis-cli not found (apt-get install redis-tools)"
  for p in "${REDIS_CLUSTER_PORTS[@]}"; do
    if timeout 2 redis-cli -h "$HOST" -p "$p" ping >/dev/null 2>&1; then continue; fi
    port_in_use "$p" && die "redis-cluster: port $p is taken (set STEWARD_REDIS_CLUSTER_PORT)"
    mkdir -p "$dir/$p"
    launch "redis-cluster-$p" "$dir/$p/redis.log" redis-server --bind "$HOST" --port "$p" --daemonize no \
      --cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" --cluster-node-timeout 5000 \
      --save '' --appendonly no --dir "$dir/$p" --protected-mode yes --maxclients 1000 --loglevel warning
  done
  local i
  for p in "${REDIS_CLUSTER_PORTS[@]}"; do
    for i in $(seq 1 100); do timeout 2 redis-cli -h "$HOST" -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  if ! timeout 3 redis-cli -h "$HOST" -p "${REDIS_CLUSTER_PORTS[0]}" cluster info 2>/dev/null | grep -q '^cluster_slots_assigned:16384'; then
    log "redis-cluster: creating the cluster on $(cluster_nodes)"
    local nodes=()
    for p in "${REDIS_CLUSTER_PORTS[@]}"; do nodes+=("$HOST:$p"); done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 \
      || { tail -n 20 "$dir/create.log" >&2; die "redis-cluster: redis-cli --cluster create failed"; }
  fi
}

cluster_status() {
  local state=down pid="-" p pids=()
  if probe_redis_cluster; then state=up; fi
  for p in "${REDIS_CLUSTER_PORTS[@]}"; do
    if owned_pid "redis-cluster-$p" >/dev/null; then pids+=("$(owned_pid "redis-cluster-$p")"); fi
  done
  if (( ${#pids[@]} > 0 )); then pid="pids ${pids[*]}"; elif [[ $state == up ]]; then pid="not started by this script"; fi
  printf '%-13s %-5s %-45s %s\n' redis-cluster "$state" "$(cluster_nodes)" "$pid"
  [[ $state == up ]]
}

cluster_down() {
  local p names=()
  for p in "${REDIS_CLUSTER_PORTS[@]}"; do names+=("redis-cluster-$p"); done
  # the nodes' state (nodes.conf) goes too: a restarted cluster is created afresh
  with_lock
  stop_services_quiet "${names[@]}"
  rm -rf "$SERVICES_DIR/redis-cluster"
}

# stop_services without the "answers but not ours" probe (the node names are not probe-able services).
stop_services_quiet() {
  local name pid n
  for name in "$@"; do
    pid="$(owned_pid "$name")" || { rm -f "$(pidfile "$name")"; continue; }
    log "$name: stopping (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for n in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    rm -f "$(pidfile "$name")"
  done
}

logfile_of() {
  case "$1" in
    kafka) echo "$SERVICES_DIR/kafka/logs/server.log" ;;
    registry) echo "$SERVICES_DIR/registry/logs/registry.log" ;;
    clickhouse) echo "$SERVICES_DIR/clickhouse/logs/clickhouse-server.err.log" ;;
    redis) echo "$SERVICES_DIR/redis/redis.log" ;;
    redis-cluster) echo "$SERVICES_DIR/redis-cluster/${REDIS_CLUSTER_PORTS[0]}/redis.log" ;;
  esac
}

# ---------------------------------------------------------------- commands

with_lock() {
  mkdir -p "$SERVICES_DIR"
  exec 9>"$SERVICES_DIR/.lock"
  if ! flock -w 600 9; then die "another services.sh is still running (lock $SERVICES_DIR/.lock)"; fi
}

cmd_up_cluster() {
  local t0 deadline
  t0="$(now)"
  with_lock
  if probe_redis_cluster; then log "redis-cluster: already up ($(cluster_nodes))"; return 0; fi
  start_redis_cluster
  deadline=$(( $(now) + TIMEOUT ))
  until probe_redis_cluster; do
    (( $(now) >= deadline )) && { tail -n 30 "$(logfile_of redis-cluster)" >&2 2>/dev/null || true; die "redis-cluster: not ok within ${TIMEOUT}s"; }
    sleep 0.2
  done
  log "redis-cluster: up at $(cluster_nodes) after $(( $(now) - t0 ))s"
}

cmd_up() {
  local services=("$@") name t0 started=()
  t0="$(now)"
  with_lock
  for name in "${services[@]}"; do
    if probe "$name"; then
      continue
    fi
    if owned_pid "$name" >/dev/null; then
      started+=("$name")   # ours and still starting (e.g. a previous `up` timed out): wait for it
      continue
    fi
    if port_in_use "$(port_of "$name")"; then
      die "$name: port $(port_of "$name") is taken by something that does not answer like $name (set STEWARD_*_PORT)"
    fi
    "start_$name"
    started+=("$name")
  done
  local failed=0 deadline pid
  deadline=$(( $(now) + TIMEOUT ))
  for name in "${started[@]}"; do
    until probe "$name"; do
      if ! pid="$(owned_pid "$name")"; then
        log "$name: exited during start-up; last lines of $(logfile_of "$name"):"
        tail -n 30 "$(logfile_of "$name")" >&2 2>/dev/null || true
        failed=1; break
      fi
      if (( $(now) >= deadline )); then
        log "$name: did not answer within ${TIMEOUT}s (pid $pid still running); last log lines:"
        tail -n 30 "$(logfile_of "$name")" >&2 2>/dev/null || true
        failed=1; break
      fi
      sleep 0.5
    done
    if probe "$name"; then log "$name: up at $(url_of "$name") after $(( $(now) - t0 ))s"; fi
  done
  (( failed == 0 )) || die "some services did not start"
  if (( ${#started[@]} == 0 )); then log "all requested services already up ($(( $(now) - t0 ))s)"; fi
}

cmd_down() {
  local name
  with_lock
  stop_services "$@"
}

cmd_status() {
  local name state pid all=0
  for name in "${ALL_SERVICES[@]}"; do
    if probe "$name"; then state=up; else state=down; all=3; fi
    if pid="$(owned_pid "$name")"; then pid="pid $pid"; elif [[ $state == up ]]; then pid="not started by this script"; else pid="-"; fi
    printf '%-11s %-5s %-45s %s\n' "$name" "$state" "$(url_of "$name")" "$pid"
  done
  return "$all"
}

check_names() {
  local n
  for n in "$@"; do
    case "$n" in kafka|registry|clickhouse|redis) ;; *) die "unknown service '$n' (kafka, registry, clickhouse, redis; redis-cluster alone)" ;; esac
  done
}

main() {
  local cmd="${1:-}"; shift || true
  local names=("$@")
  # The opt-in cluster profile is its own command set (it is never part of the default four).
  if [[ "${names[0]:-}" == "redis-cluster" ]]; then
    (( ${#names[@]} == 1 )) || die "redis-cluster is started, stopped and queried on its own"
    case "$cmd" in
      up) cmd_up_cluster; return ;;
      down|stop) cluster_down; return ;;
      restart) cluster_down; cmd_up_cluster; return ;;
      status) cluster_status; return ;;
      env) echo "export REDIS_CLUSTER_NODES=$(cluster_nodes)"; return ;;
      logs) tail -n 100 -f "$(logfile_of redis-cluster)"; return ;;
      *) die "redis-cluster: up, down, restart, status, env or logs" ;;
    esac
  fi
  (( ${#names[@]} )) || names=("${ALL_SERVICES[@]}")
  case "$cmd" in
    up) check_names "${names[@]}"; cmd_up "${names[@]}" ;;
    down|stop) check_names "${names[@]}"; cmd_down "${names[@]}" ;;
    restart) check_names "${names[@]}"; cmd_down "${names[@]}"; cmd_up "${names[@]}" ;;
    status) cmd_status ;;
    env) print_env ;;
    logs) check_names "${names[0]}"; tail -n 100 -f "$(logfile_of "${names[0]}")" ;;
    clean) cmd_down "${ALL_SERVICES[@]}"; cluster_down; rm -rf "$SERVICES_DIR"; log "removed $SERVICES_DIR" ;;
    *) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}

main "$@"
