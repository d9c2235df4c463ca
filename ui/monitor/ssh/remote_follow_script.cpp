#include "ssh/remote_follow_script.h"

namespace ddpdesk {

// Files are named by a key: N for metrics/rank-N.jsonl, LN for the rank's output, rank-N.log,
// and M for metrics/system.jsonl (neither with a pid check nor a scan for hellos). Per file the
// loop keeps i<K> (inode), o<K> (bytes sent), b<K> (base64 of the first min(o,128) bytes sent) and
// p<K> (their cksum, "CRC LENGTH": a file rewritten in place from its start changes them; the
// hello, with its pid, comes first). The file is opened once per poll (fd 3) and stat'ed and read
// through that descriptor (its first bytes through /dev/fd/3, a fresh offset on the same file), so
// inode, size and bytes belong to one file even while it is being replaced. The file can shrink
// between the stat and a read: fewer first bytes than were sent is a truncation, and the offset
// grows by the bytes actually sent, never by the size the stat saw (else the mirror and this loop
// disagree on where the file goes on, and lines are sent twice).
//
// A reconnecting follow passes what its mirror holds (key:inode:bytes:base64 of the first
// min(bytes,128) of them), so the loop goes on where the last connection left off: the same
// checks then decide whether the file is still the one mirrored (same inode, not shorter, same
// first bytes) or is read again from its start. The pid of its last hello and where its last
// unfinished line starts are found again by scanning the mirrored bytes in the remote file.
//
// status.json (replaced whole, never appended to) is sent whole when its cksum changes, before
// the poll's files: the files read after it hold every line written before the run ended.
QString remoteFollowScript() {
  return QStringLiteral(R"SH(dir=$1; iv=$2; shift 2
case $dir in "~/"*) dir=$HOME/${dir#"~/"} ;; esac
[ -d "$dir" ] || { echo "no such directory: $dir" >&2; exit 3; }
cd "$dir" || exit 3
# scan FILE FROM TO: the bytes of complete lines in [FROM,TO) and the pid of the last hello there.
scan() {
  tail -c +$(($2 + 1)) "$1" | head -c $(($3 - $2)) | LC_ALL=C awk -v total=$(($3 - $2)) '
    { n += length($0) + 1; if (n > total) exit; done = n
      if ($0 ~ /"type":"hello"/ && match($0, /"pid":[0-9]+[,}]/))
        p = substr($0, RSTART + 6, RLENGTH - 7) }
    END { print done + 0, p + 0 }'
}
for s; do
  k=${s%%:*}; r=${s#*:}; ino=${r%%:*}; r=${r#*:}; oo=${r%%:*}; b=${r#*:}
  case ${k#L}:$oo in M:*) ;; *[!0-9:]*|:*|*:) continue ;; esac
  case $oo in ''|*[!0-9]*) continue ;; esac
  op=; pid=; ls=0
  if [ "$oo" -gt 0 ]; then
    op=$(printf '%s' "$b" | base64 -d | cksum)
    case $k in
      L*|M) ;;
      *) r=$(scan "metrics/rank-$k.jsonl" 0 "$oo" 2>/dev/null); ls=${r% *}; pid=${r#* }
         case $ls in ''|*[!0-9]*) ls=0 ;; esac
         [ "$pid" = 0 ] && pid= ;;
    esac
  fi
  eval "i$k=\$ino o$k=\$oo p$k=\$op b$k=\$b h$k=\$pid l$k=\$ls"
done
if [ -f spec.json ]; then printf 'S '; base64 -w 0 < spec.json; echo; fi
echo "H 1 $(uname -n)" || exit 0
sc=
while :; do
  if [ -f status.json ]; then
    c=$(cksum < status.json)
    if [ "$c" != "$sc" ]; then
      u=$(base64 -w 0 < status.json) && { echo "U $u" || exit 0; sc=$c; }
    fi
  fi
  for f in metrics/rank-*.jsonl metrics/system.jsonl rank-*.log; do
    [ -f "$f" ] || continue
    case $f in
      metrics/system.jsonl) n=M; k=M ;;
      metrics/*) n=${f#metrics/rank-}; n=${n%.jsonl}; k=$n ;;
      *) n=${f#rank-}; n=${n%.log}; k=L$n ;;
    esac
    case $n in M) ;; ''|*[!0-9]*) continue ;; esac
    eval "oi=\${i$k-} oo=\${o$k-0} op=\${p$k-} pb=\${b$k-} pid=\${h$k-} ls=\${l$k-0}"
    if [ -n "$pid" ]; then
      if kill -0 "$pid" 2>/dev/null || ps -p "$pid" >/dev/null 2>&1; then a=1; else a=0; fi
      echo "A $n $pid $a" || exit 0
    fi
    exec 3< "$f" || continue
    st=$(stat -L -c '%i %s' - <&3) || { exec 3<&-; continue; }
    ino=${st% *}; size=${st#* }
    why=
    if [ "$ino" != "$oi" ]; then
      if [ -n "$oi" ]; then why=replaced; else why=new; fi
    elif [ "$size" -lt "$oo" ]; then why=truncated
    elif [ "$oo" -gt 0 ]; then
      c=$((oo < 128 ? oo : 128)); now=$(head -c "$c" /dev/fd/3 | cksum)
      if [ "${now#* }" -lt "$c" ]; then why=truncated; elif [ "$now" != "$op" ]; then why=rewritten; fi
    fi
    if [ -n "$why" ]; then oo=0; op=; pb=; pid=; ls=0; echo "R $k $why $ino" || exit 0; fi
    if [ "$size" -gt "$oo" ]; then
      len=$((size - oo)); [ "$len" -gt 4194304 ] && len=4194304
      d=$(tail -c +$((oo + 1)) <&3 | head -c "$len" | base64 -w 0)
      case $d in *==) got=2 ;; *=) got=1 ;; *) got=0 ;; esac
      got=$((${#d} / 4 * 3 - got))
    else got=0
    fi
    if [ "$got" -gt 0 ]; then
      echo "D $k $oo $d" || exit 0
      if [ "$oo" -lt 128 ]; then  # the first bytes as sent: what the next poll compares
        pb=$({ printf '%s' "$pb" | base64 -d; printf '%s' "$d" | base64 -d | head -c $((128 - oo)); } | base64 -w 0)
        op=$(printf '%s' "$pb" | base64 -d | cksum)
      fi
      oo=$((oo + got))
      # The pid of the last hello among the complete lines sent (a resumed rank appends a new
      # hello); ls: where the first line not yet complete starts.
      if [ "$k" = "$n" ] && [ "$k" != M ]; then  # a rank's metrics file: its hellos name the pid
        set -- $(scan "$f" "$ls" "$oo")
        ls=$((ls + ${1:-0})); [ "${2:-0}" != 0 ] && pid=$2
      fi
    fi
    exec 3<&-
    eval "i$k=\$ino o$k=\$oo p$k=\$op b$k=\$pb h$k=\$pid l$k=\$ls"
  done
  echo T || exit 0
  sleep "$iv"
done
)SH");
}

}  // namespace ddpdesk
