//! Who is calling on a loopback TCP connection: the uid that owns the client's end, read from
//! the kernel's socket tables (`/proc/net/tcp`, `/proc/net/tcp6`). `huddle mcp --http` serves
//! only its own user, as the host's unix socket does (peer credentials there).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The uid owning the socket whose local end is `client` and remote end is `server` (the two
/// ends of an accepted connection, seen from the client), if the kernel lists it.
pub fn uid_of_client(client: SocketAddr, server: SocketAddr) -> Option<u32> {
    let table = match client {
        SocketAddr::V4(_) => "/proc/net/tcp",
        SocketAddr::V6(_) => "/proc/net/tcp6",
    };
    // Read row by row up to the match: on a busy machine the table runs to megabytes.
    let file = std::fs::File::open(table).ok()?;
    let rows = std::io::BufRead::lines(std::io::BufReader::new(file)).map_while(Result::ok);
    owner_in_rows(rows, client, server)
}

/// The uid column of the row of `table` (the text of `/proc/net/tcp` or `tcp6`) whose local
/// address is `local` and remote address is `remote`.
#[cfg(test)]
fn owner_in_table(table: &str, local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    owner_in_rows(table.lines(), local, remote)
}

fn owner_in_rows<S: AsRef<str>>(
    rows: impl Iterator<Item = S>,
    local: SocketAddr,
    remote: SocketAddr,
) -> Option<u32> {
    rows.skip(1).find_map(|row| {
        let mut fields = row.as_ref().split_whitespace();
        // sl local rem st tx:rx tr:when retrnsmt uid ...
        let (row_local, row_remote) = (fields.nth(1)?, fields.next()?);
        if parse_endpoint(row_local)? != local || parse_endpoint(row_remote)? != remote {
            return None;
        }
        fields.nth(4)?.parse().ok()
    })
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): the address as the kernel prints
/// it, each 32-bit word in the machine's byte order, the port big-endian.
fn parse_endpoint(text: &str) -> Option<SocketAddr> {
    let (address, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |hex: &str| u32::from_str_radix(hex, 16).ok().map(u32::to_ne_bytes);
    let ip = match address.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(address)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for (n, chunk) in bytes.chunks_mut(4).enumerate() {
                chunk.copy_from_slice(&word(address.get(n * 8..n * 8 + 8)?)?);
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How the kernel prints an IPv4 address: its 4 bytes read as one machine-order word.
    fn hex4(ip: [u8; 4]) -> String {
        format!("{:08X}", u32::from_ne_bytes(ip))
    }

    fn hex6(ip: [u8; 16]) -> String {
        ip.chunks(4)
            .map(|c| format!("{:08X}", u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
            .collect()
    }

    #[test]
    fn the_client_row_names_its_owner() {
        let server: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let client: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let lo = hex4([127, 0, 0, 1]);
        let table = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             0: {lo}:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n\
             1: {lo}:1F90 {lo}:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1\n\
             2: {lo}:9C40 {lo}:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 3 1\n"
        );
        // The server's own end (uid 0) is not the client's.
        assert_eq!(owner_in_table(&table, client, server), Some(65534));
        assert_eq!(owner_in_table(&table, server, client), Some(0));
        let other: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        assert_eq!(owner_in_table(&table, other, server), None);
        assert_eq!(
            owner_in_table("garbage\n1: zz:zz yy 01 0 0 0 x\n", client, server),
            None
        );
    }

    #[test]
    fn ipv6_rows_are_read_word_by_word() {
        let server: SocketAddr = "[::1]:8080".parse().unwrap();
        let client: SocketAddr = "[::1]:40000".parse().unwrap();
        let lo = hex6(Ipv6Addr::LOCALHOST.octets());
        let table = format!(
            "  sl  local_address remote_address st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             0: {lo}:9C40 {lo}:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 3 1\n"
        );
        assert_eq!(owner_in_table(&table, client, server), Some(1000));
    }

    #[test]
    fn a_live_connection_is_owned_by_this_process_user() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let server = listener.local_addr().expect("its address");
        let stream = std::net::TcpStream::connect(server).expect("a connection");
        let client = stream.local_addr().expect("the client's address");
        let _accepted = listener.accept().expect("accepted");
        assert_eq!(
            uid_of_client(client, server),
            Some(crate::host::server::own_uid())
        );
    }
}
