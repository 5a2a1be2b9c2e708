//! Procedural macros for Troupe.
//!
//! [`remote`](macro@remote) marks a message type as able to cross processes:
//! it gives the type a stable name and the 64-bit type id computed from that
//! name at compile time (`troupe_remote::type_id`, FNV-1a 64). The runtime
//! crate is `troupe-remote`; use the macro through its re-export,
//! `troupe_remote::remote`.
//!
//! Invariants the macro keeps:
//! - the name is a non-empty run of `[A-Za-z0-9_.-]`, checked at compile time,
//!   so the id of a name never depends on how it is spelled in source;
//! - generic types are refused: one stable name must mean one concrete type,
//!   or two instantiations would share a type id;
//! - the item itself is emitted unchanged (derive `Serialize`/`Deserialize`
//!   yourself; the macro only implements the remote traits).

#![warn(missing_docs)]

use proc_macro::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{parse_macro_input, DeriveInput, LitStr, Token, Type};

struct RemoteArgs {
    name: LitStr,
    reply: Option<Type>,
}

impl Parse for RemoteArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name: LitStr = input.parse()?;
        let mut reply = None;
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            if !input.is_empty() {
                let key: syn::Ident = input.parse()?;
                if key != "reply" {
                    return Err(syn::Error::new(key.span(), "expected `reply = Type`"));
                }
                input.parse::<Token![=]>()?;
                reply = Some(input.parse()?);
                if input.peek(Token![,]) {
                    input.parse::<Token![,]>()?;
                }
            }
        }
        if !input.is_empty() {
            return Err(
                input.error("unexpected tokens; expected #[remote(\"name\", reply = Type)]")
            );
        }
        Ok(RemoteArgs { name, reply })
    }
}

/// Marks a message type as remote with a stable name, e.g.
/// `#[remote("shop.cart.Add")]`; an ask adds its reply type,
/// `#[remote("shop.cart.Total", reply = u64)]`.
///
/// Implements `troupe_remote::RemoteMessage` (and `RemoteAsk` when a reply
/// type is given). The type must also implement serde's `Serialize` and
/// `Deserialize`.
///
/// ```ignore
/// use serde::{Deserialize, Serialize};
/// use troupe_remote::remote;
///
/// #[remote("shop.cart.Add")]
/// #[derive(Serialize, Deserialize)]
/// struct Add { item: String, qty: u32 }
/// ```
#[proc_macro_attribute]
pub fn remote(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(attr as RemoteArgs);
    let input = parse_macro_input!(item as DeriveInput);
    let name = args.name.value();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return syn::Error::new(
            args.name.span(),
            "a remote name is a non-empty run of letters, digits, '.', '_' and '-', e.g. \"shop.cart.Add\"",
        )
        .to_compile_error()
        .into();
    }
    if !input.generics.params.is_empty() {
        return syn::Error::new_spanned(
            &input.generics,
            "a remote message type cannot be generic: one stable name must mean one concrete type",
        )
        .to_compile_error()
        .into();
    }
    let ident = &input.ident;
    let lit = &args.name;
    let ask = args.reply.map(|reply| {
        quote! {
            impl ::troupe_remote::RemoteAsk for #ident {
                type Reply = #reply;
            }
        }
    });
    quote! {
        #input
        impl ::troupe_remote::RemoteMessage for #ident {
            const NAME: &'static str = #lit;
            const TYPE_ID: u64 = ::troupe_remote::type_id(#lit);
        }
        #ask
    }
    .into()
}
