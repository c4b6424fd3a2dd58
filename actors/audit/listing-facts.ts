// The LISTINGS stream, one fact at a time (audit.ts reads it once, in order): the listing actor's rules
// (actors/listing/listing.ts) checked against the facts before each, and each fact kept in its listing's history.
import type { ListingFact } from '../../contracts/index.ts';
import { factIdUnique } from './ledger-facts.ts';
import { type AuditState, listingAt } from './state.ts';
import { notAFact, type Violation } from './violations.ts';

/**
 * One message of the LISTINGS stream at `seq` (`f` null when it is not JSON). A listing is created once, repriced
 * only while live, unlisted once (unlisting an unlisted listing answers without a fact), at a whole number of cents.
 */
export function auditListingMessage(state: AuditState, seq: number, f: ListingFact | null, raw: string): Violation[] {
  if (f === null || typeof f !== 'object' || typeof f.type !== 'string') return [notAFact('LISTINGS', seq, f, raw)];
  const found = factIdUnique(state.listingFactIds, f.id, 'LISTINGS', seq);
  let h = state.listings.get(f.listingId);
  const subject = `listing ${f.listingId}`;
  const listingState = h ? listingAt(h, Number.POSITIVE_INFINITY)?.state : undefined;
  if (f.type === 'listing_created' && h) {
    found.push({ kind: 'listing_path', subject, message: `created again at LISTINGS seq ${seq}` });
    return found;
  }
  if (f.type !== 'listing_created' && !h) {
    found.push({ kind: 'listing_path', subject, message: `${f.type} at LISTINGS seq ${seq} before it was created` });
    return found;
  }
  if (f.type !== 'listing_created' && listingState !== 'live')
    found.push({ kind: 'listing_path', subject, message: `${f.type} at LISTINGS seq ${seq} while ${listingState}` });
  if (f.type !== 'listing_unlisted' && (!Number.isInteger(f.priceCents) || f.priceCents < 0))
    found.push({ kind: 'listing_path', subject, message: `priced at ${f.priceCents} cents` });
  if (!h) {
    h = { facts: [] };
    state.listings.set(f.listingId, h);
  }
  h.facts.push({ seq, fact: f });
  return found;
}
