-- Device sync retention (docs/sync.md, Retention): forgetting revisions removes the holdings no revision of the owner
-- uses any more, and then the blobs no owner holds. Finding whether anyone still holds a digest needs this index
-- (the primary key leads with the owner).
CREATE INDEX sync_blob_owners_digest ON sync_blob_owners (digest);
