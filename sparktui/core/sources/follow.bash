# The remote follower of sparktui's ssh:// file sources (sparktui/core/sources/ssh.py), in bash with
# coreutils only, sent as `bash -c <this> ARGS`:
#   $0 a random marker, $1 the path, $2 the offset, $3 the seconds between tail's looks, $4 $5 $6 the file the
#   offset is in (device:inode, the bytes fingerprinted, their fingerprint; $4 empty for a plain offset) and
#   $7 the seconds between looks at the path's name.
# Everything it says starts with the marker, so the file's content cannot forge it: "start" first, then before
# each file it reads "file DEV:INO OFFSET N DIGEST" (its first N bytes hash to DIGEST), "gap KIND SIZE OFFSET"
# where lines were lost (SIZE "-" when not known), and tail's own notices ("<marker>: ...", tail runs under the
# marker as its name), in order with the data (2>&1).
#
# Each file is read by `tail -f` on the descriptor the script holds (3), so the identity said is that of the
# bytes sent. A watcher (bash only: `[ -ef ]` and `read -t` on a pipe nobody writes, no process per look) ends
# when the path names another file, and tail, told by --pid, reads the old file to its end before it stops.
# Then come the files rotated since, oldest first (`rotated_since`: named as rotations are, not older than the
# file just read; a log rotated twice before tail looked has one), then the path's new file from its start, or
# waited for while it is missing. TERM (the channel closing) ends tail and the watcher.
#
# On resume, a file at the path that is still the cursor's file (same inode, same first bytes, not shorter than
# the offset) goes on from the offset. Otherwise the cursor's file is looked for among the path's siblings
# (path.1, path.0, path-*, then anything named like it), by inode, then by its first bytes alone (the copy
# copytruncate leaves, or a gzip one: lost, and its size said); one found is read from the offset to its end,
# then what was rotated after it. Not found (deleted, or emptied in place with no copy left) is a gap of
# unknown size, and the path's file is read from its start.

marker=$0 path=$1 offset=$2 tail_seconds=$3 file_id=$4 head_bytes=$5 head_digest=$6 watch_seconds=$7
tail_pid= watcher_pid= path_open= found= read_found= gap= now= seen= warned=
for tool in tail stat head sha256sum; do
  command -v "$tool" >/dev/null || { echo "$tool: command not found" >&2; exit 127; }
done
trap 'kill $tail_pid $watcher_pid 2>/dev/null; exit 0' TERM HUP INT PIPE
printf '%s start\n' "$marker"
shopt -s nullglob
exec 4<> <(:)
stem=; case ${path##*/} in ?*.*) stem=${path%.*} ;; esac

nap() { read -t "$watch_seconds" -u 4; }
identity() { stat -L -c '%d:%i %s' -- "$1" 2>/dev/null; }
digest() { local sum; sum=$(head -c "$2" -- "$1" 2>/dev/null | sha256sum); printf %s "${sum:0:16}"; }

follow() {  # the file open on descriptor 3, from $offset, until the path names another file
  local info head status
  info=$(identity /dev/fd/3); head=${info#* }; [ "$head" -le 1024 ] 2>/dev/null || head=1024
  printf '%s file %s %s %s %s\n' "$marker" "${info% *}" "$offset" "$head" "$(digest /dev/fd/3 "$head")"
  ( while [ "$path" -ef /dev/fd/3 ] && kill -0 $$ 2>/dev/null; do nap; done ) & watcher_pid=$!
  ( exec -a "$marker" tail ---disable-inotify -s "$tail_seconds" --pid="$watcher_pid" -c "+$((offset + 1))" -f /dev/fd/3 2>&1 ) &
  tail_pid=$!
  wait "$tail_pid"; status=$?; kill "$watcher_pid" 2>/dev/null; tail_pid= watcher_pid= offset=0
  [ "$status" = 0 ] || exit "$status"
}

lost() {  # a compressed rotation $1 cannot be followed: say its size past byte $2, where known
  local size=-
  case $1 in *.gz) command -v gzip >/dev/null && size=$(gzip -dc -- "$1" 2>/dev/null | wc -c) || size=- ;; esac
  [ "$size" = - ] || { [ "$size" -ge "$2" ] && size=$((size - $2)); } || size=-
  printf '%s gap compressed %s %s\n' "$marker" "$size" "$2"
}

rotated_since() {  # the rotations newer than the file on descriptor 3, oldest first
  local file i ordered=() candidates=("$path".[0-9]* "$path"-[0-9]*)
  local -A listed
  [ -z "$stem" ] || candidates+=("$stem".[0-9]* "$stem"-[0-9]*)
  for file in "${candidates[@]}"; do
    [ -f "$file" ] && [ -z "${listed[$file]}" ] && ! [ "$file" -ot /dev/fd/3 ] || continue
    ! [ "$file" -ef /dev/fd/3 ] && ! [ "$file" -ef "$path" ] || continue
    listed[$file]=1 i=${#ordered[@]}
    while [ "$i" -gt 0 ] && [ "${ordered[i - 1]}" -nt "$file" ]; do ordered[i]=${ordered[i - 1]} i=$((i - 1)); done
    ordered[i]=$file
  done
  for file in "${ordered[@]}"; do
    case $file in
    *.gz | *.xz | *.bz2 | *.zst) lost "$file" 0 ;;
    *) ! { exec 3<"$file"; } 2>/dev/null || follow ;;
    esac
  done
}

{ exec 3<"$path"; } 2>/dev/null && path_open=1 && now=$(identity /dev/fd/3)
if [ -z "$file_id" ]; then
  [ "${now#* }" -ge "$offset" ] 2>/dev/null || offset=0
elif ! { [ "${now% *}" = "$file_id" ] && [ "${now#* }" -ge "$offset" ] && [ "$(digest /dev/fd/3 "$head_bytes")" = "$head_digest" ]; }; then
  siblings=("$path".1 "$path".0 "$path"-* "$path"?*); [ -z "$stem" ] || siblings+=("$stem"?*)
  for sibling in "${siblings[@]}"; do
    [ -f "$sibling" ] && ! [ "$sibling" -ef "$path" ] && seen=$(identity "$sibling") || continue
    [ "${seen% *}" = "$file_id" ] && [ "$(digest "$sibling" "$head_bytes")" = "$head_digest" ] || continue
    found=$sibling; if [ "${seen#* }" -ge "$offset" ]; then read_found=1; else gap=truncated; fi
    break
  done
  if [ -z "$found" ] && [ "$head_bytes" -gt 0 ]; then
    for sibling in "${siblings[@]}"; do
      [ -f "$sibling" ] && ! [ "$sibling" -ef "$path" ] || continue
      case $sibling in
      *.gz)
        seen=$(gzip -dc -- "$sibling" 2>/dev/null | head -c "$head_bytes" | sha256sum)
        [ "${seen:0:16}" = "$head_digest" ] && found=$sibling gap=compressed && break ;;
      *)
        seen=$(identity "$sibling") && [ "${seen#* }" -ge "$offset" ] &&
          [ "$(digest "$sibling" "$head_bytes")" = "$head_digest" ] && found=$sibling read_found=1 && break ;;
      esac
    done
  fi
  [ -n "$found" ] || { [ "${now% *}" = "$file_id" ] && gap=replaced || gap=gone; }
  case $gap in compressed) lost "$found" "$offset" ;; ?*) printf '%s gap %s - %s\n' "$marker" "$gap" "$offset" ;; esac
  if [ -n "$found" ] && { exec 3<"$found"; } 2>/dev/null; then
    [ -z "$read_found" ] || follow
    rotated_since
  fi
  path_open= offset=0
fi
while :; do
  if [ -z "$path_open" ] && ! { exec 3<"$path"; } 2>/dev/null; then
    [ -e "$path" ] && reason="Permission denied" || reason="No such file or directory"
    [ -n "$warned" ] || printf "%s: cannot open '%s' for reading: %s\n" "$marker" "$path" "$reason"
    warned=1; nap; continue
  fi
  path_open= warned=; follow; rotated_since
done
