-- A small shop schema exercising TiDB DDL: clustered keys, AUTO_RANDOM, partitions, renames.
CREATE DATABASE IF NOT EXISTS shop;
USE shop;

CREATE TABLE customers (
    id BIGINT AUTO_RANDOM PRIMARY KEY,
    email VARCHAR(255) NOT NULL,
    name VARCHAR(100),
    created_at DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3),
    UNIQUE KEY uk_email (email)
);

CREATE TABLE orders (
    id BIGINT NOT NULL,
    customer_id BIGINT NOT NULL,
    status ENUM('new', 'paid', 'shipped') NOT NULL DEFAULT 'new',
    total DECIMAL(12, 2) NOT NULL,
    placed_at DATE NOT NULL,
    PRIMARY KEY (id, placed_at) /*T![clustered_index] CLUSTERED */,
    KEY idx_customer (customer_id)
) PARTITION BY RANGE COLUMNS (placed_at) (
    PARTITION p2024 VALUES LESS THAN ('2025-01-01'),
    PARTITION pmax VALUES LESS THAN (MAXVALUE)
);

ALTER TABLE customers ADD COLUMN phone VARCHAR(20) AFTER email, ADD INDEX idx_phone (phone);
RENAME TABLE orders TO purchases;
ALTER TABLE purchases TRUNCATE PARTITION p2024;
