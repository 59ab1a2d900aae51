#!/usr/bin/env bash
# Fetch and run a real Apache Pulsar standalone broker on loopback, without Docker.
#
#   scripts/pulsar.sh fetch    download (Maven Central, via mvn) and unpack the distribution once
#   scripts/pulsar.sh start    start a standalone broker on 127.0.0.1 in the background, wait until
#                              it is ready, create tenant tg and namespaces tg/request, tg/response
#                              (and tg/notify, which the reference services subscribe to, and
#                              tg/registry, for the registry's replicated mode)
#   scripts/pulsar.sh stop     stop the broker started by `start` (by the pid in the pid file)
#   scripts/pulsar.sh status   say whether it runs (exit 0 if running, 3 if not)
#   scripts/pulsar.sh env      print the PULSAR_WS_URL / PULSAR_ADMIN_URL lines for the running broker
#
# Environment (all optional):
#   PULSAR_VERSION        4.0.x release to use (default below; 4.0.9 is not on Maven Central)
#   PULSAR_CACHE_DIR      where the unpacked distribution is kept between runs
#                         (default ~/.cache/tool-registry/pulsar; the tarball also stays in ~/.m2)
#   PULSAR_STATE_DIR      data, logs, config copy and pid file (default <repo>/.cache/pulsar-run)
#   PULSAR_WEB_PORT       admin REST + WebSocket port (default 8080)
#   PULSAR_BROKER_PORT    binary protocol port (default 6650)
#   PULSAR_MEM            JVM memory flags (default "-Xms256m -Xmx1g -XX:MaxDirectMemorySize=1g")
#   PULSAR_GC             JVM GC flags (default "-XX:+UseG1GC -XX:+PerfDisableSharedMem")
#   PULSAR_START_TIMEOUT  seconds to wait for readiness (default 180)
#   PULSAR_STOP_TIMEOUT   seconds to wait after SIGTERM before SIGKILL (default 30)
#   PULSAR_WIPE_DATA      1 (default) wipes the state dir's broker data on start; 0 keeps it
#   PULSAR_MAX_TEXT_FRAME_SIZE  the broker's webSocketMaxTextFrameSize in bytes: the largest text
#                         frame its WebSocket API takes, so the largest message a WebSocket client
#                         can publish (payloads travel base64-encoded). Default: the shipped 1048576
#   PULSAR_MAX_MESSAGE_SIZE     the broker's maxMessageSize in bytes (default: the shipped 5242880)
set -euo pipefail

# Newest 4.0.x whose binary distribution resolves on Maven Central (checked: 4.0.9 does not).
DEFAULT_PULSAR_VERSION=4.0.8
MAVEN_DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PULSAR_VERSION="${PULSAR_VERSION:-$DEFAULT_PULSAR_VERSION}"
PULSAR_CACHE_DIR="${PULSAR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tool-registry/pulsar}"
PULSAR_STATE_DIR="${PULSAR_STATE_DIR:-$REPO_ROOT/.cache/pulsar-run}"
PULSAR_WEB_PORT="${PULSAR_WEB_PORT:-8080}"
PULSAR_BROKER_PORT="${PULSAR_BROKER_PORT:-6650}"
PULSAR_START_TIMEOUT="${PULSAR_START_TIMEOUT:-180}"
PULSAR_STOP_TIMEOUT="${PULSAR_STOP_TIMEOUT:-30}"
PULSAR_WIPE_DATA="${PULSAR_WIPE_DATA:-1}"
PULSAR_MAX_TEXT_FRAME_SIZE="${PULSAR_MAX_TEXT_FRAME_SIZE:-}"
PULSAR_MAX_MESSAGE_SIZE="${PULSAR_MAX_MESSAGE_SIZE:-}"

DIST_DIR="$PULSAR_CACHE_DIR/apache-pulsar-$PULSAR_VERSION"
PID_FILE="$PULSAR_STATE_DIR/pulsar.pid"
PORTS_FILE="$PULSAR_STATE_DIR/ports.env"
LOG_DIR="$PULSAR_STATE_DIR/logs"
OUT_LOG="$LOG_DIR/pulsar-standalone.out"
CONF_FILE="$PULSAR_STATE_DIR/standalone.conf"

log() { echo "[pulsar.sh] $*" >&2; }
die() { echo "[pulsar.sh] ERROR: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# fetch

dist_ready() { [[ -x "$DIST_DIR/bin/pulsar" && -f "$DIST_DIR/.unpacked-ok" ]]; }

cmd_fetch() {
  if dist_ready; then
    log "Pulsar $PULSAR_VERSION already unpacked in $DIST_DIR"
    return 0
  fi
  command -v mvn >/dev/null || die "mvn (Maven) is needed to fetch Pulsar"
  mkdir -p "$PULSAR_CACHE_DIR"
  # Serialise concurrent fetches of the same cache.
  if command -v flock >/dev/null; then
    exec 9>"$PULSAR_CACHE_DIR/.fetch.lock"
    flock 9
    if dist_ready; then
      log "Pulsar $PULSAR_VERSION already unpacked in $DIST_DIR"
      return 0
    fi
  fi
  local tmp start artifact tarball
  tmp="$(mktemp -d "$PULSAR_CACHE_DIR/.download.XXXXXX")"
  start=$(date +%s)
  artifact="org.apache.pulsar:pulsar-server-distribution:$PULSAR_VERSION:tar.gz:bin"
  log "fetching $artifact with mvn (about 240 MB, kept in ~/.m2) ..."
  if ! (cd "$tmp" && mvn -B -q "$MAVEN_DEPENDENCY_PLUGIN:copy" \
        -Dartifact="$artifact" -DoutputDirectory="$tmp" >"$tmp/mvn.log" 2>&1); then
    cat "$tmp/mvn.log" >&2 || true
    rm -rf "$tmp"
    die "could not fetch $artifact (set PULSAR_VERSION to another 4.0.x release?)"
  fi
  tarball="$tmp/pulsar-server-distribution-$PULSAR_VERSION-bin.tar.gz"
  [[ -f "$tarball" ]] || { rm -rf "$tmp"; die "mvn succeeded but $tarball is missing"; }
  log "unpacking into $DIST_DIR ..."
  tar xzf "$tarball" -C "$tmp"
  [[ -x "$tmp/apache-pulsar-$PULSAR_VERSION/bin/pulsar" ]] \
    || { rm -rf "$tmp"; die "unexpected tarball layout (no apache-pulsar-$PULSAR_VERSION/bin/pulsar)"; }
  rm -rf "$DIST_DIR"
  mv "$tmp/apache-pulsar-$PULSAR_VERSION" "$DIST_DIR"
  touch "$DIST_DIR/.unpacked-ok"
  rm -rf "$tmp"
  log "Pulsar $PULSAR_VERSION ready in $DIST_DIR ($(( $(date +%s) - start )) s)"
}

# ---------------------------------------------------------------------------------------------
# helpers

# A live pid that really is a Pulsar standalone JVM (guards against a recycled pid).
pid_is_pulsar() {
  local pid="$1"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qE 'PulsarStandaloneStarter|bin/pulsar standalone' || return 1
  fi
  return 0
}

running_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  pid_is_pulsar "$pid" || return 1
  echo "$pid"
}

port_in_use() {
  # Something accepts connections on 127.0.0.1:$1 (covers 0.0.0.0 listeners too).
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
  if command -v ss >/dev/null; then
    ss -Htln "sport = :$1" 2>/dev/null | grep -q . && return 0
  fi
  return 1
}

# set_conf FILE KEY VALUE: replace "KEY=..." or append it.
set_conf() {
  local file="$1" key="$2" value="$3"
  if grep -qE "^${key}=" "$file"; then
    sed -i -E "s|^${key}=.*|${key}=${value}|" "$file"
  else
    # the shipped standalone.conf has no newline at its end
    if [[ -s "$file" && -n "$(tail -c 1 "$file")" ]]; then echo >>"$file"; fi
    printf '%s=%s\n' "$key" "$value" >>"$file"
  fi
}

load_ports() {
  if [[ -f "$PORTS_FILE" ]]; then
    # shellcheck disable=SC1090
    source "$PORTS_FILE"
  fi
}

admin_url() { echo "http://127.0.0.1:$PULSAR_WEB_PORT"; }

is_ready() {
  local base
  base="$(admin_url)"
  curl -sf --max-time 5 "$base/admin/v2/clusters" 2>/dev/null | grep -q '"standalone"' || return 1
  curl -sf --max-time 5 "$base/admin/v2/namespaces/public" 2>/dev/null | grep -q '"public/default"' || return 1
}

# admin_put PATH JSON: 204 (created) and 409 (exists) are both fine.
admin_put() {
  local path="$1" body="$2" code
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X PUT \
            -H 'Content-Type: application/json' -d "$body" "$(admin_url)$path")" || code=000
  case "$code" in
    200|204) log "created $path" ;;
    409) log "$path already exists" ;;
    *) die "PUT $path answered HTTP $code" ;;
  esac
}

create_tg_namespaces() {
  admin_put /admin/v2/tenants/tg '{"adminRoles": [], "allowedClusters": ["standalone"]}'
  admin_put /admin/v2/namespaces/tg/request '{}'
  admin_put /admin/v2/namespaces/tg/response '{}'
  # The reference services (trustgraph-base AsyncProcessor) also subscribe to the config push
  # topic non-persistent://tg/notify/config at startup and keep retrying until it exists.
  admin_put /admin/v2/namespaces/tg/notify '{}'
  # The registry's replicated mode (REPLICATION_TOPIC=persistent://tg/registry/...).
  admin_put /admin/v2/namespaces/tg/registry '{}'
}

print_env() {
  echo "PULSAR_WS_URL=ws://127.0.0.1:$PULSAR_WEB_PORT"
  echo "PULSAR_ADMIN_URL=http://127.0.0.1:$PULSAR_WEB_PORT"
  echo "PULSAR_BROKER_URL=pulsar://127.0.0.1:$PULSAR_BROKER_PORT"
}

show_log_tail() {
  local f
  for f in "$OUT_LOG" "$LOG_DIR"/pulsar-standalone-*.log; do
    [[ -f "$f" ]] || continue
    echo "----- last 60 lines of $f -----" >&2
    tail -n 60 "$f" >&2 || true
  done
}

wait_ready() {
  local pid="$1" start now waited last=0
  start=$(date +%s)
  log "waiting up to ${PULSAR_START_TIMEOUT}s for the broker on $(admin_url) ..."
  while true; do
    if is_ready; then
      log "broker ready after $(( $(date +%s) - start )) s"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      show_log_tail
      rm -f "$PID_FILE"
      die "the broker process $pid exited during startup"
    fi
    now=$(date +%s)
    waited=$(( now - start ))
    if (( waited >= PULSAR_START_TIMEOUT )); then
      show_log_tail
      die "broker not ready after ${PULSAR_START_TIMEOUT}s (pid $pid still running; stop it with: $0 stop)"
    fi
    if (( waited - last >= 10 )); then
      log "... still starting (${waited}s)"
      last=$waited
    fi
    sleep 2
  done
}

# ---------------------------------------------------------------------------------------------
# start / stop / status

cmd_start() {
  local pid
  mkdir -p "$PULSAR_STATE_DIR"
  if pid="$(running_pid)"; then
    local want_web="$PULSAR_WEB_PORT" want_broker="$PULSAR_BROKER_PORT"
    load_ports
    log "broker already running (pid $pid, web port $PULSAR_WEB_PORT); reusing it"
    if [[ "$want_web" != "$PULSAR_WEB_PORT" || "$want_broker" != "$PULSAR_BROKER_PORT" ]]; then
      die "the running broker uses ports $PULSAR_WEB_PORT/$PULSAR_BROKER_PORT, not $want_web/$want_broker; stop it first"
    fi
    wait_ready "$pid"
    create_tg_namespaces
    print_env
    return 0
  fi
  rm -f "$PID_FILE"

  command -v java >/dev/null || die "java (17) is needed to run Pulsar"
  command -v curl >/dev/null || die "curl is needed"
  cmd_fetch

  local p name
  # (The embedded bookie takes a free ephemeral port on 127.0.0.1 by itself.)
  for p in "PULSAR_WEB_PORT:$PULSAR_WEB_PORT" "PULSAR_BROKER_PORT:$PULSAR_BROKER_PORT"; do
    name="${p%%:*}"
    if port_in_use "${p#*:}"; then
      die "port ${p#*:} ($name) on 127.0.0.1 is already in use; stop what listens there or set $name to a free port"
    fi
  done

  mkdir -p "$LOG_DIR" "$PULSAR_STATE_DIR/data"
  rm -f "$LOG_DIR"/pulsar_gc_*.log*
  if [[ "$PULSAR_WIPE_DATA" == 1 ]]; then
    rm -rf "$PULSAR_STATE_DIR/data"
    mkdir -p "$PULSAR_STATE_DIR/data"
  fi

  # A private copy of the standalone config, pinned to loopback.
  cp "$DIST_DIR/conf/standalone.conf" "$CONF_FILE"
  set_conf "$CONF_FILE" bindAddress 127.0.0.1
  set_conf "$CONF_FILE" advertisedAddress 127.0.0.1
  set_conf "$CONF_FILE" brokerServicePort "$PULSAR_BROKER_PORT"
  set_conf "$CONF_FILE" webServicePort "$PULSAR_WEB_PORT"
  set_conf "$CONF_FILE" webSocketServiceEnabled true
  set_conf "$CONF_FILE" allowAutoTopicCreation true
  set_conf "$CONF_FILE" enableNonPersistentTopics true
  set_conf "$CONF_FILE" functionsWorkerEnabled false
  # embedded bookie: listen on the loopback interface only
  set_conf "$CONF_FILE" listeningInterface lo
  set_conf "$CONF_FILE" allowLoopback true
  # Message size limits, when asked for (a restart with `stop` then `start` applies new values).
  local size
  for size in "webSocketMaxTextFrameSize:$PULSAR_MAX_TEXT_FRAME_SIZE" "maxMessageSize:$PULSAR_MAX_MESSAGE_SIZE"; do
    [[ -n "${size#*:}" ]] || continue
    [[ "${size#*:}" =~ ^[0-9]+$ ]] || die "${size%%:*} must be a number of bytes (got ${size#*:})"
    set_conf "$CONF_FILE" "${size%%:*}" "${size#*:}"
  done

  {
    echo "PULSAR_WEB_PORT=$PULSAR_WEB_PORT"
    echo "PULSAR_BROKER_PORT=$PULSAR_BROKER_PORT"
    echo "PULSAR_VERSION=$PULSAR_VERSION"
  } >"$PORTS_FILE"

  local wipe=()
  [[ "$PULSAR_WIPE_DATA" == 1 ]] && wipe=(--wipe-data)
  local launcher=()
  command -v setsid >/dev/null && launcher=(setsid)

  log "starting Pulsar $PULSAR_VERSION standalone (web $PULSAR_WEB_PORT, broker $PULSAR_BROKER_PORT); logs in $LOG_DIR"
  (
    cd "$PULSAR_STATE_DIR"
    export PULSAR_STANDALONE_CONF="$CONF_FILE"
    export PULSAR_LOG_DIR="$LOG_DIR"
    export PULSAR_MEM="${PULSAR_MEM:--Xms256m -Xmx1g -XX:MaxDirectMemorySize=1g}"
    export PULSAR_GC="${PULSAR_GC:--XX:+UseG1GC -XX:+PerfDisableSharedMem}"
    exec "${launcher[@]}" "$DIST_DIR/bin/pulsar" standalone \
      --no-functions-worker --no-stream-storage "${wipe[@]}" \
      --advertised-address 127.0.0.1 \
      --bookkeeper-dir "$PULSAR_STATE_DIR/data/bookkeeper" \
      --metadata-dir "$PULSAR_STATE_DIR/data/metadata" \
      </dev/null >"$OUT_LOG" 2>&1
  ) &
  pid=$!
  echo "$pid" >"$PID_FILE"
  log "broker pid $pid (pid file $PID_FILE)"

  wait_ready "$pid"
  create_tg_namespaces
  print_env
}

cmd_stop() {
  if [[ ! -f "$PID_FILE" ]]; then
    log "no pid file ($PID_FILE): nothing to stop"
    return 0
  fi
  local pid waited=0
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  if ! pid_is_pulsar "$pid"; then
    log "pid file points at ${pid:-nothing}, which is not a running Pulsar broker; removing it"
    rm -f "$PID_FILE"
    return 0
  fi
  log "stopping broker pid $pid (SIGTERM) ..."
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do
    if (( waited >= PULSAR_STOP_TIMEOUT )); then
      log "still running after ${PULSAR_STOP_TIMEOUT}s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
      break
    fi
    sleep 1
    waited=$(( waited + 1 ))
  done
  rm -f "$PID_FILE"
  log "stopped"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    load_ports
    if is_ready; then
      echo "running (pid $pid, ready on $(admin_url))"
    else
      echo "running (pid $pid, not ready yet on $(admin_url))"
    fi
    return 0
  fi
  echo "not running"
  return 3
}

cmd_env() {
  running_pid >/dev/null || die "no broker running"
  load_ports
  print_env
}

case "${1:-}" in
  fetch) cmd_fetch ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) cmd_env ;;
  *)
    echo "usage: $0 {fetch|start|stop|status|env}" >&2
    exit 2
    ;;
esac
