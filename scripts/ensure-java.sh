#!/usr/bin/env bash
# Makes sure a JDK 21+ and Maven are here, for the Lucene side of the benchmarks and parity checks.
# Looks for a JDK 21+ in $JAVA_HOME, /usr/lib/jvm/* and `java` on PATH; for Maven, `mvn` on PATH.
# What is missing is installed with the system package manager (Debian/Ubuntu, as root):
# `apt-get update`, then `apt-get install -y` of the newest openjdk-2x-jdk-headless the archive
# has (25, 21; Debian 12 has neither, and the machines the project runs on ship Temurin 25 under
# /usr/lib/jvm), and `maven`. Says what it found or installed on stderr, and prints the JDK's home on stdout:
#   export JAVA_HOME="$(bash scripts/ensure-java.sh)"
# Exits non-zero, saying what is missing and what to do, when it cannot provide both.
set -euo pipefail

say() { echo "[ensure-java] $*" >&2; }

# The major version of a `java` binary (21 for "21.0.2", 8 for "1.8.0"), or nothing.
java_major() {
  local v
  v=$("$1" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n1) || return 0
  [ -n "$v" ] || return 0
  case "$v" in
    1.*) v=${v#1.} ;;
  esac
  echo "${v%%[.+-]*}"
}

# A JDK home (with bin/java and bin/javac) of version 21 or newer, or nothing.
find_jdk() {
  local cands=() h m j
  [ -n "${JAVA_HOME:-}" ] && cands+=("$JAVA_HOME")
  for h in /usr/lib/jvm/*; do [ -d "$h" ] && cands+=("$h"); done
  if j=$(command -v java 2>/dev/null); then
    j=$(readlink -f "$j")
    cands+=("${j%/bin/java}")
  fi
  for h in "${cands[@]}"; do
    [ -x "$h/bin/java" ] && [ -x "$h/bin/javac" ] || continue
    m=$(java_major "$h/bin/java")
    if [ -n "$m" ] && [ "$m" -ge 21 ]; then
      echo "$h"
      return 0
    fi
  done
}

can_install() { [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; }

apt_updated=0
apt_update() {
  if [ "$apt_updated" = 0 ]; then
    say "apt-get update"
    apt-get update -qq >&2
    apt_updated=1
  fi
}

# True when the archive has a candidate for the package.
has_candidate() {
  local c
  c=$(apt-cache policy "$1" 2> /dev/null | sed -n 's/^ *Candidate: *//p')
  [ -n "$c" ] && [ "$c" != "(none)" ]
}

install_jdk() {
  apt_update
  local p
  for p in openjdk-25-jdk-headless openjdk-21-jdk-headless; do
    if has_candidate "$p"; then
      say "installing $p: apt-get install -y $p"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >&2
      return 0
    fi
  done
  # Debian 12's archive has no JDK 21+ (only openjdk-17); nothing else is reachable from the
  # project's machines, whose image ships Temurin 25 under /usr/lib/jvm.
  say "the package archive has no JDK 21+ (openjdk-25/21-jdk-headless have no candidate)"
  return 1
}

jdk=$(find_jdk)
if [ -n "$jdk" ]; then
  say "JDK $(java_major "$jdk/bin/java") found at $jdk"
elif can_install; then
  say "no JDK 21+ found (JAVA_HOME=${JAVA_HOME:-unset}, /usr/lib/jvm, PATH); installing one"
  install_jdk || true
  jdk=$(find_jdk)
  [ -n "$jdk" ] && say "JDK $(java_major "$jdk/bin/java") installed at $jdk"
fi
if [ -z "$jdk" ]; then
  say "ERROR: no JDK 21+ (looked at JAVA_HOME=${JAVA_HOME:-unset}, /usr/lib/jvm/*, java on PATH),"
  if can_install; then
    say "and the package archive has none to install. Install a JDK 21+ (e.g. Temurin 21) and"
  else
    say "and cannot install one (needs root and apt-get). Install a JDK 21+ (e.g. Temurin 21) and"
  fi
  say "set JAVA_HOME to it; the Lucene parity checks cannot run without it."
  exit 1
fi

if mvn=$(command -v mvn 2> /dev/null); then
  say "Maven found: $mvn ($(JAVA_HOME=$jdk mvn -B -v 2> /dev/null | head -n1))"
elif can_install; then
  apt_update
  say "no Maven found; installing it: apt-get install -y maven"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends maven >&2
  say "Maven installed: $(command -v mvn)"
else
  say "ERROR: no Maven (mvn) on PATH, and cannot install it (needs root and apt-get)."
  say "Install Maven 3.6+; it builds the Lucene driver under bench/lucene."
  exit 1
fi
echo "$jdk"
