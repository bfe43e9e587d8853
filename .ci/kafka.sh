#!/usr/bin/env bash
# A single Apache Kafka broker (KRaft: broker and controller in one JVM) on loopback for the tests.
#
#   bash .ci/kafka.sh [start|stop|status|restart|reset]      (default: start)
#
# Kafka's jars come from Maven Central through Maven (no distribution tarball is reachable here): a
# throwaway pom in the cache folder depends on org.apache.kafka:kafka_2.13 and Maven copies its runtime
# dependencies next to it. The JVM runs Kafka's own main class, kafka.Kafka, on that class path.
#
# Safe to run twice: the jars are resolved once and reused, the storage folder is formatted once, and a
# broker that this script started (or a kafka.Kafka process on our config) that is already listening is
# reused. `start` prints KAFKA_BROKERS=host:port on its last line, for .ci/run to export.
#
# Environment (all optional):
#   HCP_KAFKA_VERSION          Kafka version from Maven Central           (4.4.0)
#   HCP_KAFKA_HOME             cache for jars and the local Maven repo    (/var/cache/hcp-kafka)
#   HCP_KAFKA_DATA             config, storage, logs and pid file         (/var/lib/hcp-kafka)
#   HCP_KAFKA_PORT             client listener on 127.0.0.1               (29092)
#   HCP_KAFKA_CONTROLLER_PORT  KRaft controller listener on 127.0.0.1     (29093)
#   HCP_KAFKA_HEAP             JVM heap options                           (-Xms256m -Xmx768m)
#   HCP_KAFKA_START_TIMEOUT    seconds to wait for the broker to be ready (90)
set -euo pipefail

KAFKA_VERSION="${HCP_KAFKA_VERSION:-4.4.0}"
SCALA_VERSION="2.13"
KAFKA_HOME="${HCP_KAFKA_HOME:-/var/cache/hcp-kafka}"
KAFKA_DATA="${HCP_KAFKA_DATA:-/var/lib/hcp-kafka}"
HOST="127.0.0.1"
PORT="${HCP_KAFKA_PORT:-29092}"
CONTROLLER_PORT="${HCP_KAFKA_CONTROLLER_PORT:-29093}"
HEAP="${HCP_KAFKA_HEAP:--Xms256m -Xmx768m}"
START_TIMEOUT="${HCP_KAFKA_START_TIMEOUT:-90}"

JARS_DIR="$KAFKA_HOME/$KAFKA_VERSION/jars"
JARS_DONE="$KAFKA_HOME/$KAFKA_VERSION/.resolved"
CONFIG="$KAFKA_DATA/server.properties"
LOG4J_CONFIG="$KAFKA_DATA/log4j2.properties"
STORAGE="$KAFKA_DATA/storage"
LOG_DIR="$KAFKA_DATA/logs"
SERVER_LOG="$LOG_DIR/server.log"
PID_FILE="$KAFKA_DATA/kafka.pid"
CLUSTER_ID_FILE="$KAFKA_DATA/cluster-id"

say() { echo "kafka.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# --- Java and Maven (installed from Debian's packages on a bare machine) -----------------------------
ensure_tools() {
  local missing=()
  command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  local major
  major="$(java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')"
  [[ "${major%%.*}" -ge 17 ]] 2>/dev/null || die "Kafka $KAFKA_VERSION needs Java 17 or newer (found ${major:-none})"
}

# --- Kafka's jars from Maven Central ------------------------------------------------------------------
resolve_jars() {
  if [[ -f "$JARS_DONE" ]] && compgen -G "$JARS_DIR/kafka_${SCALA_VERSION}-${KAFKA_VERSION}.jar" >/dev/null; then
    return 0
  fi
  ensure_tools
  say "resolving org.apache.kafka:kafka_${SCALA_VERSION}:${KAFKA_VERSION} from Maven Central"
  local work="$KAFKA_HOME/$KAFKA_VERSION"
  mkdir -p "$work"
  rm -rf "$JARS_DIR.tmp"
  # log4j-slf4j-impl binds Kafka's SLF4J 1.x logging to Log4j 2 (the distribution ships the same pair).
  cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hcp.ci</groupId>
  <artifactId>kafka-server-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_${SCALA_VERSION}</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>2.25.5</version>
    </dependency>
  </dependencies>
</project>
EOF
  local attempt
  for attempt in 1 2 3; do
    if mvn -B -q -f "$work/pom.xml" -Dmaven.repo.local="$KAFKA_HOME/m2" \
        dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$JARS_DIR.tmp" \
        >"$work/mvn.log" 2>&1; then
      break
    fi
    ((attempt < 3)) || { tail -40 "$work/mvn.log" >&2; die "Maven could not resolve Kafka's jars (see $work/mvn.log)"; }
    say "Maven failed (attempt $attempt), retrying"
    sleep 3
  done
  [[ -f "$JARS_DIR.tmp/kafka_${SCALA_VERSION}-${KAFKA_VERSION}.jar" ]] || die "kafka_${SCALA_VERSION}-${KAFKA_VERSION}.jar missing after Maven ran"
  rm -rf "$JARS_DIR"
  mv "$JARS_DIR.tmp" "$JARS_DIR"
  touch "$JARS_DONE"
  say "$(ls "$JARS_DIR" | wc -l) jars in $JARS_DIR"
}

# --- Process helpers --------------------------------------------------------------------------------
port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

# True when process $1 is a kafka.Kafka JVM on our config (read without a pipe or a subprocess).
is_our_broker() {
  local args=()
  mapfile -d '' -t args 2>/dev/null <"/proc/$1/cmdline" || return 1
  [[ " ${args[*]-} " == *" kafka.Kafka $CONFIG "* ]]
}

# The pid of a kafka.Kafka JVM running on our config: from the pid file, else found in /proc (a broker
# whose pid file was lost or overwritten).
broker_pid() {
  local pid=""
  [[ -f "$PID_FILE" ]] && pid="$(<"$PID_FILE")"
  if [[ "$pid" =~ ^[0-9]+$ ]] && is_our_broker "$pid"; then
    echo "$pid"
    return 0
  fi
  local dir
  for dir in /proc/[0-9]*; do
    pid="${dir#/proc/}"
    if is_our_broker "$pid"; then
      echo "$pid" >"$PID_FILE"
      echo "$pid"
      return 0
    fi
  done
  rm -f "$PID_FILE"
  return 1
}

# Ready = the client port accepts connections and this JVM's log says the server started.
ready() {
  port_open "$PORT" && grep -q "Kafka Server started" "$SERVER_LOG" 2>/dev/null
}

write_config() {
  mkdir -p "$STORAGE" "$LOG_DIR"
  cat >"$CONFIG" <<EOF
# Written by .ci/kafka.sh: one KRaft node that is both broker and controller, loopback only.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@${HOST}:${CONTROLLER_PORT}
listeners=PLAINTEXT://${HOST}:${PORT},CONTROLLER://${HOST}:${CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://${HOST}:${PORT}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=${STORAGE}
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# Topics are created by the application (KafkaPublisher.ensureTopics) with their configured partitions
# and retention; a typo in a topic name fails instead of creating a stray topic.
auto.create.topics.enable=false
log.retention.hours=168
EOF
  # Log4j writes to standard output, which start-up sends to $SERVER_LOG with the JVM's own output.
  cat >"$LOG4J_CONFIG" <<EOF
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.controller.name = kafka.controller
logger.controller.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
}

# The JVM command line; the class path stays one word ("jars/*" is expanded by java, not the shell).
java_cmd() {
  local heap
  read -r -a heap <<<"$HEAP"
  JAVA_CMD=(java "${heap[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$LOG4J_CONFIG" -cp "$JARS_DIR/*")
}

format_storage() {
  if [[ -f "$STORAGE/meta.properties" ]]; then
    return 0
  fi
  local cluster_id
  if [[ -s "$CLUSTER_ID_FILE" ]]; then
    cluster_id="$(cat "$CLUSTER_ID_FILE")"
  else
    cluster_id="$("${JAVA_CMD[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)"
    [[ -n "$cluster_id" ]] || die "could not make a cluster id with kafka.tools.StorageTool"
    echo "$cluster_id" >"$CLUSTER_ID_FILE"
  fi
  say "formatting $STORAGE (cluster $cluster_id)"
  "${JAVA_CMD[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$CONFIG" --ignore-formatted \
    >"$LOG_DIR/format.log" 2>&1 || { cat "$LOG_DIR/format.log" >&2; die "formatting the KRaft storage failed"; }
}

# --- Subcommands --------------------------------------------------------------------------------------
cmd_start() {
  local pid
  if pid="$(broker_pid)"; then
    if ready; then
      say "broker already running (pid $pid), reusing it"
      echo "KAFKA_BROKERS=${HOST}:${PORT}"
      return 0
    fi
    say "broker pid $pid is not ready yet; waiting for it"
  else
    if port_open "$PORT" || port_open "$CONTROLLER_PORT"; then
      die "port $PORT or $CONTROLLER_PORT on $HOST is taken by a process that is not this script's broker"
    fi
    resolve_jars
    ensure_tools
    write_config
    java_cmd
    format_storage
    # One log per broker start; the previous one is kept beside it.
    if [[ -f "$SERVER_LOG" ]]; then mv -f "$SERVER_LOG" "$SERVER_LOG.1"; fi
    say "starting Kafka $KAFKA_VERSION on ${HOST}:${PORT} (logs: $SERVER_LOG)"
    # setsid: the broker outlives this shell and gets no signal meant for the caller's process group.
    setsid nohup "${JAVA_CMD[@]}" kafka.Kafka "$CONFIG" >>"$SERVER_LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$PID_FILE"
  fi
  local waited=0
  until ready; do
    if ! alive "$pid"; then
      tail -40 "$SERVER_LOG" >&2 || true
      rm -f "$PID_FILE"
      die "the broker exited during start-up (see $SERVER_LOG)"
    fi
    if ((waited >= START_TIMEOUT * 2)); then
      tail -40 "$SERVER_LOG" >&2 || true
      die "the broker was not ready after ${START_TIMEOUT}s (see $SERVER_LOG)"
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  say "ready after $((waited / 2))s (pid $pid)"
  echo "KAFKA_BROKERS=${HOST}:${PORT}"
}

cmd_stop() {
  local pid
  if ! pid="$(broker_pid)"; then
    say "no broker running"
    return 0
  fi
  say "stopping broker pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  local waited=0
  while alive "$pid"; do
    if ((waited >= 60)); then # 30 s for a clean shutdown, then it is killed
      say "broker did not stop in 30s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  rm -f "$PID_FILE"
  waited=0
  while port_open "$PORT" && ((waited < 20)); do sleep 0.5; waited=$((waited + 1)); done
  say "stopped"
}

cmd_status() {
  local pid
  if pid="$(broker_pid)" && ready; then
    echo "running pid=$pid KAFKA_BROKERS=${HOST}:${PORT}"
    return 0
  fi
  if [[ -n "${pid:-}" ]]; then
    echo "starting pid=$pid"
  else
    echo "stopped"
  fi
  return 3
}

cmd_reset() {
  cmd_stop
  say "removing $STORAGE and $CLUSTER_ID_FILE"
  rm -rf "$STORAGE" "$CLUSTER_ID_FILE"
}

case "${1:-start}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  reset) cmd_reset ;;
  *) die "usage: $0 [start|stop|status|restart|reset]" ;;
esac
