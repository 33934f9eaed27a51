//! Connections as people paste them: `ss`, `netstat`, `conntrack`, tcpdump, `/proc/net/tcp`, CSV and the page's own lines.
