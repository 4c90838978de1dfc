-- Traffic for the shop schema (run after shop.sql in the same session):
-- autocommit inserts, a multi-statement transaction, a key change and a rollback.
INSERT INTO customers (email, name) VALUES ('ann@example.com', 'Ann'), ('bob@example.com', 'Bob');
INSERT INTO purchases (id, customer_id, status, total, placed_at)
VALUES (1, 1, 'new', 19.90, '2024-12-24'), (2, 2, 'new', 5.00, '2025-03-01');

BEGIN;
UPDATE purchases SET status = 'paid' WHERE id = 1;
UPDATE purchases SET total = total + 2.50, status = 'paid' WHERE id = 2;
INSERT INTO purchases (id, customer_id, total, placed_at) VALUES (3, 1, 7.25, '2025-03-02');
COMMIT;

-- moving a row to another partition: TiCDC sees a delete and an insert
UPDATE purchases SET placed_at = '2025-01-15' WHERE id = 1;

BEGIN;
DELETE FROM purchases WHERE id = 3;
ROLLBACK;

UPDATE customers SET phone = '+1-555-0100' WHERE email = 'ann@example.com';
