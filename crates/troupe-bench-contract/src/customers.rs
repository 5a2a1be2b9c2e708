//! The read-only table of the `reader_db` workload (NorthwindDb, seed 003):
//! 29 Northwind customers, one [`Customer`] row type for every framework.
//!
//! Every side holds the table as `Arc<Vec<Arc<Customer>>>` and a reader
//! answers a read with one `Arc` clone of the row ([`read`]), so the per-read
//! work is the same everywhere.
use std::sync::Arc;

/// One customer row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Customer {
    /// Key, 1..=29.
    pub id: u32,
    /// Company name.
    pub name: String,
    /// City.
    pub city: String,
    /// Country.
    pub country: String,
}

/// Number of rows.
pub const COUNT: u32 = 29;

const ROWS: [(&str, &str, &str); COUNT as usize] = [
    ("Alfreds Futterkiste", "Berlin", "Germany"),
    (
        "Ana Trujillo Emparedados y helados",
        "Mexico D.F.",
        "Mexico",
    ),
    ("Antonio Moreno Taqueria", "Mexico D.F.", "Mexico"),
    ("Around the Horn", "London", "UK"),
    ("Berglunds snabbkop", "Lulea", "Sweden"),
    ("Blauer See Delikatessen", "Mannheim", "Germany"),
    ("Blondel pere et fils", "Strasbourg", "France"),
    ("Bolido Comidas preparadas", "Madrid", "Spain"),
    ("Bon app'", "Marseille", "France"),
    ("Bottom-Dollar Markets", "Tsawassen", "Canada"),
    ("B's Beverages", "London", "UK"),
    ("Cactus Comidas para llevar", "Buenos Aires", "Argentina"),
    ("Centro comercial Moctezuma", "Mexico D.F.", "Mexico"),
    ("Chop-suey Chinese", "Bern", "Switzerland"),
    ("Comercio Mineiro", "Sao Paulo", "Brazil"),
    ("Consolidated Holdings", "London", "UK"),
    ("Drachenblut Delikatessen", "Aachen", "Germany"),
    ("Du monde entier", "Nantes", "France"),
    ("Eastern Connection", "London", "UK"),
    ("Ernst Handel", "Graz", "Austria"),
    ("Familia Arquibaldo", "Sao Paulo", "Brazil"),
    ("FISSA Fabrica Inter. Salchichas S.A.", "Madrid", "Spain"),
    ("Folies gourmandes", "Lille", "France"),
    ("Folk och fa HB", "Bracke", "Sweden"),
    ("Frankenversand", "Munchen", "Germany"),
    ("France restauration", "Nantes", "France"),
    ("Franchi S.p.A.", "Torino", "Italy"),
    ("Furia Bacalhau e Frutos do Mar", "Lisboa", "Portugal"),
    ("Galeria del gastronomo", "Barcelona", "Spain"),
];

/// The table, indexed by `id - 1`.
pub fn table() -> Arc<Vec<Arc<Customer>>> {
    Arc::new(
        ROWS.iter()
            .enumerate()
            .map(|(i, (name, city, country))| {
                Arc::new(Customer {
                    id: i as u32 + 1,
                    name: name.to_string(),
                    city: city.to_string(),
                    country: country.to_string(),
                })
            })
            .collect(),
    )
}

/// The id the `i`-th read asks for.
pub fn id_for(i: usize) -> u32 {
    (i % COUNT as usize) as u32 + 1
}

/// A reader's lookup: the row with `id`, as one `Arc` clone, or `None`.
#[inline]
pub fn read(table: &[Arc<Customer>], id: u32) -> Option<Arc<Customer>> {
    table.get((id as usize).wrapping_sub(1)).cloned()
}

/// The sum of the ids of reads `first..first + count` (what a client's replies must add up to).
pub fn id_sum(first: usize, count: usize) -> u64 {
    (first..first + count).map(|i| u64::from(id_for(i))).sum()
}

/// A `reader_db` client's reads `first..first + reads`: read `i` asks for
/// [`id_for`]`(i)` through `ask`, at most `outstanding` at a time (one future
/// drives them all, a `FuturesUnordered`), and every answer must be the row
/// asked for. Returns the number of good reads, or what went wrong.
#[cfg(feature = "tokio")]
pub async fn drive_reads<F, Fut, E>(
    first: usize,
    reads: usize,
    outstanding: usize,
    mut ask: F,
) -> Result<usize, String>
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Arc<Customer>>, E>>,
    E: std::fmt::Display,
{
    use futures::stream::{FuturesUnordered, StreamExt};
    use futures::FutureExt;
    let end = first + reads;
    let mut next = first;
    let mut inflight = FuturesUnordered::new();
    let mut send = |i: usize| {
        let id = id_for(i);
        ask(id).map(move |reply| (id, reply))
    };
    while next < end && inflight.len() < outstanding {
        inflight.push(send(next));
        next += 1;
    }
    let mut good = 0;
    while let Some((id, reply)) = inflight.next().await {
        match reply {
            Ok(Some(row)) if row.id == id => good += 1,
            Ok(Some(row)) => return Err(format!("asked for {id}, got {}", row.id)),
            Ok(None) => return Err(format!("no row for {id}")),
            Err(e) => return Err(format!("read of {id} failed: {e}")),
        }
        if next < end {
            inflight.push(send(next));
            next += 1;
        }
    }
    Ok(good)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_find_their_row() {
        let t = table();
        assert_eq!(t.len(), COUNT as usize);
        for i in 0..100 {
            let id = id_for(i);
            assert_eq!(read(&t, id).map(|c| c.id), Some(id));
        }
        assert!(read(&t, 0).is_none() && read(&t, COUNT + 1).is_none());
        assert_eq!(id_sum(0, 29), 29 * 30 / 2);
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn drive_reads_keeps_the_limit_and_checks_rows() {
        use std::cell::Cell;
        let t = table();
        let in_flight = Cell::new(0usize);
        let most = Cell::new(0usize);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let good = rt.block_on(drive_reads(5, 100, 8, |id| {
            in_flight.set(in_flight.get() + 1);
            most.set(most.get().max(in_flight.get()));
            let row = read(&t, id);
            let in_flight = &in_flight;
            async move {
                tokio::task::yield_now().await;
                in_flight.set(in_flight.get() - 1);
                Ok::<_, String>(row)
            }
        }));
        assert_eq!(good, Ok(100));
        assert_eq!(most.get(), 8);
        let wrong = rt.block_on(drive_reads(0, 10, 4, |_| async {
            Ok::<_, String>(read(&t, 1))
        }));
        assert_eq!(wrong, Err("asked for 2, got 1".to_string()));
    }
}
