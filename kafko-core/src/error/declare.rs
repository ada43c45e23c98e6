//! `error_enum!`: declares an error enum from entries of the catalog (`failure!`, in
//! `catalog.rs`), with its `kind()` and its conversions, so that a failure several
//! operations share is written once.

/// Declares an error enum whose variants are entries of the catalog, each named as its
/// entry or, written `Name = Entry`, under another name. The mode says what else comes
/// with it:
///
/// - `union` ([`KafkoError`](crate::KafkoError)): `kind()` and `duplicate()`. The union
///   is exhaustive, so that a caller that maps every failure (a server's answers) by a
///   `match` with no `_` arm does not compile until a new failure is placed; the
///   operation errors are `#[non_exhaustive]`.
/// - `leaf` (an error the union holds flattened): `kind()` and its conversion into the
///   union.
/// - `operation "what"`: `kind()`, its conversion into the union, and the
///   classification of a union failure into it, by an exhaustive match: `never:` names
///   every other variant of the union (so a new one must be placed in every operation),
///   and those become [`InternalError::Unexpected`](crate::InternalError::Unexpected)
///   naming `what`.
///
/// Each variant is looked up in turn (`@next`); the catalog calls back with the
/// variant's record `{ [declaration] [kind arm] [into-union arm] [from-union arms]
/// [copy arm] }` added to the ones done.
macro_rules! error_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident: $mode:ident $($what:literal)? {
            $($variant:ident $(= $entry:ident)?),* $(,)?
        }
        $(never: $($never:ident),* $(,)?)?
    ) => {
        // The derive and the `transparent` of the catalog's wrapping variants are written
        // here, in one expansion: thiserror binds the wrapped field under the derive's
        // hygiene and reads it under the keyword's, so the two must match.
        error_enum! {
            @next [
                $mode transparent
                [$(#[$attr])* #[derive(Debug, thiserror::Error)]]
                $name [$($what)?] [$($($never)*)?]
            ] []
            $($variant $(= $entry)?,)*
        }
    };
    (@next $head:tt $done:tt $variant:ident = $entry:ident, $($rest:tt)*) => {
        failure! { $entry $variant [$head $done $($rest)*] }
    };
    (@next $head:tt $done:tt $variant:ident, $($rest:tt)*) => {
        failure! { $variant $variant [$head $done $($rest)*] }
    };
    (@next [$mode:ident $transparent:ident $($head:tt)*] $done:tt) => {
        error_enum! { @$mode $($head)* $done }
    };

    (@union $attrs:tt $name:ident [] []
        [$({ $decl:tt $kind:tt $to:tt $from:tt [$($copy:tt)*] })*]
    ) => {
        error_enum! { @enum $attrs $name [$({ $decl $kind })*] {} }

        impl $name {
            /// A copy used to fail every waiter of one failed write with the same cause.
            /// Lossy only where a field cannot be copied: an OS error keeps its kind and
            /// message, and a partial send (which no writer produces) keeps its
            /// description.
            pub(crate) fn duplicate(&self) -> Self {
                match self {
                    $($($copy)*)*
                }
            }
        }
    };
    (@leaf [$($attr:tt)*] $name:ident [] []
        [$({ $decl:tt $kind:tt [$($to:tt)*] $from:tt $copy:tt })*]
    ) => {
        error_enum! {
            @enum [$($attr)* #[non_exhaustive]] $name [$({ $decl $kind })*] {
                /// This failure as a variant of the union.
                fn into_union(self) -> crate::error::KafkoError {
                    match self {
                        $($($to)*)*
                    }
                }
            }
        }

        impl From<$name> for crate::error::KafkoError {
            fn from(e: $name) -> Self {
                e.into_union()
            }
        }
    };
    (@operation $attrs:tt $name:ident [$what:literal] [$($never:ident)*]
        [$({ $decl:tt $kind:tt $to:tt [$($from:tt)*] $copy:tt })*]
    ) => {
        error_enum! { @leaf $attrs $name [] [] [$({ $decl $kind $to [] [] })*] }

        #[doc(hidden)]
        impl From<crate::error::KafkoError> for $name {
            /// Classifies a failure of the crate's shared layers (see the module doc).
            fn from(e: crate::error::KafkoError) -> Self {
                match e {
                    $($($from)*)*
                    e @ ($(crate::error::KafkoError::$never { .. })|*) => {
                        Self::Internal(crate::error::InternalError::Unexpected {
                            operation: $what,
                            error: e.to_string(),
                        })
                    }
                }
            }
        }
    };
    (@enum [$($attr:tt)*] $name:ident [$({ [$($decl:tt)*] [$($kind:tt)*] })*] { $($more:tt)* }) => {
        $($attr)*
        pub enum $name {
            $($($decl)*,)*
        }

        impl $name {
            /// The coarse category of this error.
            pub fn kind(&self) -> crate::error::ErrorKind {
                match self {
                    $($($kind)*)*
                }
            }

            $($more)*
        }
    };
}
