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
}
