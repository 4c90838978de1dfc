"""Applications on the MySQL port, end to end against `ticdc-sim serve`: SQLAlchemy 2's ORM
(create_all, reflection, a pool of 8 connections writing at once), Alembic's migrations and
Django's ORM (its MySQL backend and django-tidb's), each checked against what the default
changefeed sent: the tables rebuilt from the changefeed are what the application reads."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support_service import Server

sqlalchemy = pytest.importorskip("sqlalchemy", reason="SQLAlchemy is a dev dependency")
orm = pytest.importorskip("sqlalchemy.orm")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = Server.start(tmp_path_factory.mktemp("apps"), LOCK_WAIT_S="10")
    yield found
    if found.process.poll() is None:
        found.stop()


def url(server: Server, database: str = "test") -> str:
    return f"mysql+pymysql://root@127.0.0.1:{server.mysql_port}/{database}"


def rebuilt(server: Server, schema: str, table: str) -> list[dict[str, Any]]:
    """The table as a consumer of the default changefeed rebuilds it, by primary key."""
    page = httpx.get(
        f"{server.http}/sim/v1/clusters/default/changefeeds/default/messages",
        params={"limit": 10_000},
    ).json()["messages"]
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for message in page:
        for d in message["decoded"]:
            if d.get("schema") != schema or d.get("table") != table:
                continue
            if d["type"] == "ddl" and d.get("ddl_type") in ("CREATE", "ERASE"):
                rows.clear()
            if d["type"] in ("update", "delete"):
                rows.pop(tuple(d["pre_columns"][k] for k in d["keys"]), None)
            if d["type"] in ("insert", "update"):
                rows[tuple(d["columns"][k] for k in d["keys"])] = d["columns"]
    return [rows[key] for key in sorted(rows)]


def as_text(rows: list[dict[str, Any]]) -> list[dict[str, str | None]]:
    return [{k: None if v is None else str(v) for k, v in row.items()} for row in rows]


# -- SQLAlchemy ---------------------------------------------------------------------------


class Base(orm.DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "author"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    name: orm.Mapped[str] = orm.mapped_column(sqlalchemy.String(40), unique=True)


class Book(Base):
    __tablename__ = "book"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    title: orm.Mapped[str] = orm.mapped_column(sqlalchemy.String(80), index=True)
    author_id: orm.Mapped[int] = orm.mapped_column(sqlalchemy.ForeignKey("author.id"))
    copies: orm.Mapped[int] = orm.mapped_column(default=0)


class Shelf(Base):
    __tablename__ = "shelf"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    book_id: orm.Mapped[int] = orm.mapped_column(
        sqlalchemy.ForeignKey("book.id", ondelete="CASCADE")
    )
    label: orm.Mapped[str] = orm.mapped_column(sqlalchemy.String(10))


def test_sqlalchemy_create_all_and_reflection(server: Server) -> None:
    engine = sqlalchemy.create_engine(url(server))
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    inspect = sqlalchemy.inspect(engine)
    assert {"author", "book", "shelf"} <= set(inspect.get_table_names())
    assert [(c["name"], str(c["type"]), c["nullable"]) for c in inspect.get_columns("book")] == [
        ("id", "INTEGER", False),
        ("title", "VARCHAR(80)", False),
        ("author_id", "INTEGER", False),
        ("copies", "INTEGER", False),
    ]
    assert inspect.get_pk_constraint("book")["constrained_columns"] == ["id"]
    assert inspect.get_foreign_keys("shelf") == [
        {
            "name": "fk_1",
            "constrained_columns": ["book_id"],
            "referred_schema": None,
            "referred_table": "book",
            "referred_columns": ["id"],
            "options": {"ondelete": "CASCADE"},
        }
    ]
    assert {i["name"]: i["column_names"] for i in inspect.get_indexes("book")} == {
        "fk_1": ["author_id"],
        "ix_book_title": ["title"],
    }
    assert [u["column_names"] for u in inspect.get_unique_constraints("author")] == [["name"]]
    reflected = sqlalchemy.MetaData()
    reflected.reflect(engine, only=["author", "book", "shelf"])
    book = reflected.tables["book"]
    assert [fk.target_fullname for fk in book.foreign_keys] == ["author.id"]
    engine.dispose()


def test_sqlalchemy_sessions_on_a_pool_of_8_write_at_once(server: Server) -> None:
    """Eight threads, each an ORM session from one pool: inserts, updates and deletes of
    rows of its own, and increments of rows all share (retried on a deadlock, as an
    application does); the changefeed holds exactly what committed."""
    engine = sqlalchemy.create_engine(url(server), pool_size=8, max_overflow=0)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    with orm.Session(engine) as session:
        session.add(Author(id=1, name="shared"))
        session.add_all([Book(id=n, title=f"shared {n}", author_id=1) for n in (1, 2)])
        session.commit()
    failures: list[BaseException] = []

    def worker(number: int) -> None:
        try:
            with orm.Session(engine) as session:
                authors = [Author(name=f"w{number}-{k}") for k in range(5)]
                session.add_all(authors)
                session.flush()
                session.add_all(
                    [Book(title=f"{a.name} book", author_id=a.id, copies=1) for a in authors]
                )
                session.commit()
                own = session.scalars(
                    sqlalchemy.select(Book).where(Book.title.like(f"w{number}-%"))
                ).all()
                for book in own:
                    book.copies += number
                session.delete(own[-1])
                session.commit()
                for attempt in range(20):  # the shared rows, in either order: deadlocks
                    try:
                        order = (1, 2) if number % 2 else (2, 1)
                        for book_id in order:
                            session.execute(
                                sqlalchemy.update(Book)
                                .where(Book.id == book_id)
                                .values(copies=Book.copies + 1)
                            )
                        session.commit()
                        break
                    except sqlalchemy.exc.OperationalError as e:
                        session.rollback()
                        if e.orig.args[0] not in (1213, 1205) or attempt == 19:
                            raise
        except BaseException as e:  # reported below
            failures.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures
    with orm.Session(engine) as session:
        shared = session.scalars(sqlalchemy.select(Book.copies).where(Book.id <= 2)).all()
        assert shared == [8, 8]
        books = session.execute(sqlalchemy.text("SELECT * FROM book ORDER BY id")).mappings()
        seen = as_text([dict(row) for row in books])
        authors = session.execute(sqlalchemy.text("SELECT * FROM author ORDER BY id")).mappings()
        seen_authors = as_text([dict(row) for row in authors])
    assert len(seen) == 2 + 8 * 4
    assert as_text(rebuilt(server, "test", "book")) == seen
    assert as_text(rebuilt(server, "test", "author")) == seen_authors
    engine.dispose()


# -- Alembic ------------------------------------------------------------------------------

_MIGRATIONS = [
    ("m1", None, "op.create_table('item', sa.Column('id', sa.Integer, primary_key=True),"
     " sa.Column('name', sa.String(20)))", "op.drop_table('item')"),
    ("m2", "m1", "op.add_column('item', sa.Column('price', sa.Integer))",
     "op.drop_column('item', 'price')"),
    ("m3", "m2", "op.create_index('ix_item_name', 'item', ['name'])",
     "op.drop_index('ix_item_name', 'item')"),
    ("m4", "m3", "op.alter_column('item', 'price', new_column_name='cost',"
     " existing_type=sa.Integer)", "op.alter_column('item', 'cost', new_column_name='price',"
     " existing_type=sa.Integer)"),
]  # fmt: skip


def test_alembic_upgrades_and_downgrades_a_chain(server: Server, tmp_path: Path) -> None:
    alembic_config = pytest.importorskip("alembic.config")
    command = pytest.importorskip("alembic.command")
    scripts = tmp_path / "migrations"
    (scripts / "versions").mkdir(parents=True)
    (scripts / "script.py.mako").write_text("")
    (scripts / "env.py").write_text(
        textwrap.dedent("""
        from alembic import context
        from sqlalchemy import create_engine

        url = context.config.get_main_option("sqlalchemy.url")
        with create_engine(url).connect() as connection:
            context.configure(connection=connection, target_metadata=None)
            with context.begin_transaction():
                context.run_migrations()
        """)
    )
    for revision, down, up, undo in _MIGRATIONS:
        (scripts / "versions" / f"{revision}.py").write_text(
            "from alembic import op\nimport sqlalchemy as sa\n"
            f"revision = {revision!r}\ndown_revision = {down!r}\n"
            "branch_labels = None\ndepends_on = None\n"
            f"def upgrade():\n    {up}\ndef downgrade():\n    {undo}\n"
        )
    with httpx.Client() as client:
        client.post(f"{server.http}/sim/v1/clusters/default/sql", content="CREATE DATABASE al")
    config = alembic_config.Config()
    config.set_main_option("script_location", str(scripts))
    config.set_main_option("sqlalchemy.url", url(server, "al"))
    command.upgrade(config, "head")
    engine = sqlalchemy.create_engine(url(server, "al"))
    inspect = sqlalchemy.inspect(engine)
    assert [c["name"] for c in inspect.get_columns("item")] == ["id", "name", "cost"]
    assert [i["name"] for i in inspect.get_indexes("item")] == ["ix_item_name"]
    command.downgrade(config, "-1")
    inspect = sqlalchemy.inspect(engine)
    assert [c["name"] for c in inspect.get_columns("item")] == ["id", "name", "price"]
    command.upgrade(config, "head")
    with engine.connect() as connection:
        assert connection.execute(
            sqlalchemy.text("SELECT version_num FROM alembic_version")
        ).all() == [("m4",)]
    engine.dispose()
    page = httpx.get(
        f"{server.http}/sim/v1/clusters/default/changefeeds/default/messages",
        params={"limit": 10_000},
    ).json()["messages"]
    ddl = [
        d["ddl_type"]
        for m in page
        for d in m["decoded"]
        if d["type"] == "ddl" and d.get("schema") == "al" and d.get("table") == "item"
    ]
    assert ddl == ["CREATE", "ALTER", "CINDEX", "ALTER", "ALTER", "ALTER"]


# -- Django -------------------------------------------------------------------------------

_MODELS = """
from django.db import models


class Customer(models.Model):
    name = models.CharField(max_length=50, unique=True)


class Order(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    note = models.CharField(max_length=20, db_index=True, default="")
"""

_RUN = """
import json, sys
import pymysql

pymysql.install_as_MySQLdb()
import django
from django.conf import settings

engine, port, database = sys.argv[1], int(sys.argv[2]), sys.argv[3]
settings.configure(
    DATABASES={"default": {"ENGINE": engine, "NAME": database, "USER": "root",
                           "HOST": "127.0.0.1", "PORT": port}},
    INSTALLED_APPS=["shop"], USE_TZ=True, DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
)
django.setup()
from django.core.management import call_command

call_command("makemigrations", "shop", verbosity=0)
call_command("migrate", verbosity=0)
from shop.models import Customer, Order

ann, bob = Customer.objects.create(name="ann"), Customer.objects.create(name="bob")
for customer, amount in ((ann, "12.50"), (ann, "3.00"), (bob, "7.25")):
    Order.objects.create(customer=customer, amount=amount)
Order.objects.filter(customer=ann, amount="3.00").update(amount="4.00", note="fixed")
bob.delete()  # cascades to bob's order
rows = {
    "shop_customer": list(Customer.objects.order_by("id").values("id", "name")),
    "shop_order": list(
        Order.objects.order_by("id").values("id", "customer_id", "amount", "note")
    ),
}
joined = list(  # a lookup across the foreign key: a join
    Order.objects.filter(customer__name="ann").order_by("id").values_list("customer__name", "amount")
)
from django.db.models import Count, Sum

grouped = list(  # GROUP BY across the foreign key, and DISTINCT
    Order.objects.values("customer__name").annotate(n=Count("id"), total=Sum("amount"))
    .order_by("customer__name")
)
distinct = list(Order.objects.values_list("customer_id", flat=True).distinct())
summed = Order.objects.aggregate(total=Sum("amount"))
print(json.dumps({**rows, "joined": joined, "grouped": grouped, "distinct": distinct,
                  "summed": summed}, default=str))
"""


@pytest.mark.parametrize("backend", ["django.db.backends.mysql", "django_tidb"])
def test_django_migrate_and_crud(server: Server, tmp_path: Path, backend: str) -> None:
    pytest.importorskip("django", reason="Django is a dev dependency")
    database = "dj_" + backend.split(".")[-1]
    with httpx.Client() as client:
        client.post(
            f"{server.http}/sim/v1/clusters/default/sql", content=f"CREATE DATABASE {database}"
        )
    app = tmp_path / "shop"
    (app / "migrations").mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "migrations" / "__init__.py").write_text("")
    (app / "models.py").write_text(_MODELS)
    (tmp_path / "run.py").write_text(_RUN)
    done = subprocess.run(
        [sys.executable, "run.py", backend, str(server.mysql_port), database],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert [c["name"] for c in seen["shop_customer"]] == ["ann"]
    assert [(o["amount"], o["note"]) for o in seen["shop_order"]] == [
        ("12.50", ""),
        ("4.00", "fixed"),
    ]
    assert seen.pop("joined") == [["ann", "12.50"], ["ann", "4.00"]]
    assert seen.pop("grouped") == [{"customer__name": "ann", "n": 2, "total": "16.50"}]
    assert seen.pop("distinct") == [seen["shop_customer"][0]["id"]]
    assert seen.pop("summed") == {"total": "16.50"}
    for table, rows in seen.items():
        from_feed = rebuilt(server, database, table)
        assert [{k: str(r[k]) for k in rows[0]} for r in from_feed] == as_text(rows)
