-- INSERT forms, ON DUPLICATE KEY UPDATE, REPLACE, IGNORE, transactions and savepoints.
CREATE TABLE accounts (
    id INT AUTO_INCREMENT PRIMARY KEY,
    email VARCHAR(64) NOT NULL,
    balance DECIMAL(12, 2) NOT NULL DEFAULT 0,
    visits INT NOT NULL DEFAULT 0,
    UNIQUE KEY uk_email (email)
);
INSERT INTO accounts (email, balance) VALUES ('a@x', 10), ('b@x', 20.505), ('c@x', 30);
INSERT INTO accounts SET email = 'd@x', balance = DEFAULT;
INSERT INTO accounts (email, visits) VALUES ('a@x', 1) ON DUPLICATE KEY UPDATE visits = visits + VALUES(visits);
INSERT IGNORE INTO accounts (id, email) VALUES (100, 'b@x'), (101, 'e@x');
REPLACE INTO accounts (id, email, balance) VALUES (2, 'b2@x', 99);
UPDATE accounts SET balance = balance * 2 WHERE balance > 15 ORDER BY id DESC LIMIT 2;
DELETE FROM accounts WHERE email LIKE 'c%';
BEGIN;
INSERT INTO accounts (email) VALUES ('f@x');
UPDATE accounts SET visits = visits + 10 WHERE email = 'f@x';
DELETE FROM accounts WHERE id = 1;
INSERT INTO accounts (id, email) VALUES (1, 'a-again@x');
COMMIT;
BEGIN;
INSERT INTO accounts (email) VALUES ('rolled@x');
ROLLBACK;
START TRANSACTION;
INSERT INTO accounts (email) VALUES ('kept@x');
SAVEPOINT s1;
INSERT INTO accounts (email) VALUES ('undone@x');
UPDATE accounts SET balance = 1 WHERE email = 'kept@x';
ROLLBACK TO SAVEPOINT s1;
UPDATE accounts SET visits = 7 WHERE email = 'kept@x';
COMMIT;
SET autocommit = 0;
INSERT INTO accounts (email) VALUES ('manual@x');
UPDATE accounts SET visits = visits + 1;
COMMIT;
SET autocommit = 1;
CREATE TABLE log (msg VARCHAR(20), n INT);
INSERT INTO log VALUES ('x', 1), ('x', 1), ('y', 2);
DELETE FROM log WHERE msg = 'x' LIMIT 1;
UPDATE log SET n = n + 1;
INSERT INTO log (msg, n) SELECT email, visits FROM accounts WHERE visits > 5;
