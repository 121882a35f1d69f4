# The remote reader of what a followed file held past the last look before it was emptied in place
# (logrotate's copytruncate), for sparktui's ssh:// file sources (sparktui/core/sources/ssh.py), in bash with
# coreutils only, sent as `bash -c <this> ARGS`:
#   $0 a random marker, $1 the path, $2 the offset read to, $3 $4 how many first bytes were fingerprinted and
#   their fingerprint.
# The copy is the path's sibling (path.1, path.0, path-*, then anything named like it) with those first bytes
# and at least the offset's bytes. It says "<marker> copy <its path>" and then sends the copy from the offset
# to its end, or says "<marker> none".
marker=$0 path=$1 offset=$2 head_bytes=$3 head_digest=$4
shopt -s nullglob
stem=; case ${path##*/} in ?*.*) stem=${path%.*} ;; esac
siblings=("$path".1 "$path".0 "$path"-* "$path"?*); [ -z "$stem" ] || siblings+=("$stem"?*)
for sibling in "${siblings[@]}"; do
  [ -f "$sibling" ] && ! [ "$sibling" -ef "$path" ] || continue
  case $sibling in *.gz | *.xz | *.bz2 | *.zst) continue ;; esac
  size=$(stat -L -c %s -- "$sibling" 2>/dev/null) && [ "$size" -ge "$offset" ] || continue
  sum=$(head -c "$head_bytes" -- "$sibling" 2>/dev/null | sha256sum)
  [ "${sum:0:16}" = "$head_digest" ] || continue
  printf '%s copy %s\n' "$marker" "$sibling"
  exec tail -c "+$((offset + 1))" -- "$sibling"
done
printf '%s none\n' "$marker"
