"""IMAP (+ SMTP) accounts: the full mailbox adapter and the ``imap`` mail source.

* :mod:`.account` — ``[accounts.<id>]`` settings; keyring keys.
* :mod:`.connection` — connect, authenticate, trace, error translation.
* :mod:`.ids` — message IDs (account + folder + UIDVALIDITY + UID).
* :mod:`.adapter` — :class:`ImapMailbox`, the email-adapter contract.
* :mod:`.source` — :class:`ImapSource`, the mail-source contract on top.

Nothing here imports Textual; see docs/imap.md for what a user can do.
"""
