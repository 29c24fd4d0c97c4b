//! The fields an `apply` plan names for an update, compared one by one.

/// The names of the fields in which `$now` differs from `$was`, in the order given: the
/// fields an `apply` plan lists for an update.
macro_rules! differing {
    ($was:expr, $now:expr; $($field:ident),+ $(,)?) => {{
        let mut names: Vec<String> = Vec::new();
        $(
            if $was.$field != $now.$field {
                names.push(stringify!($field).to_owned());
            }
        )+
        names
    }};
}
pub(super) use differing;
