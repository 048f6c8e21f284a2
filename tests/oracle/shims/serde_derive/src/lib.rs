//! No-op `#[derive(Serialize, Deserialize)]`: the derives expand to nothing.
//!
//! The vendored reference derives serde traits on its types; the oracle does
//! its own (hand-written) JSON, so the derives only need to be accepted.
//! `#[serde(...)]` helper attributes are registered so they would be accepted too.

use proc_macro::TokenStream;

#[proc_macro_derive(Serialize, attributes(serde))]
pub fn derive_serialize(_item: TokenStream) -> TokenStream {
    TokenStream::new()
}

#[proc_macro_derive(Deserialize, attributes(serde))]
pub fn derive_deserialize(_item: TokenStream) -> TokenStream {
    TokenStream::new()
}
